"""What a log says about the run's outcome when no error-level form is in it: a line that still reads as a failure
(default deny: such a log is not PASS), a Python traceback whose exception line the paste cut off, and whether a
short excerpt shows any sign that the run worked (a step moved, a clean exit, a served request).
"""

from __future__ import annotations

import re

from tpudoctor.logdiag.benign import is_benign, load_benign
from tpudoctor.logdiag.errorlevel import line_level
from tpudoctor.logs.prefixes import unwrapped
from tpudoctor.logs.steps import match_step

SHORT_PASTE_MAX_LINES = 20
"""A source of at most this many lines is an excerpt: without a sign of a healthy run its outcome is unknown."""
CUT_TRACEBACK_TAIL_LINES = 30
"""A traceback whose last frame is this close to the end of its source, with no exception line after it, was cut."""

# The words that say something failed, whatever the line's form (``unless a benign rule names that line``).
_FAILURE_WORDS = re.compile(
    r"(?i)\btraceback \(most recent call last\)|\b\w*exception\b|\bout of memory\b|\bfail(?:ed|ure|ures|s)?\b"
    r"|\bfatal\b|\babort(?:ed|ing)?\b|\bkilled\b|\berrors?\b"
)
# ... and the words around them that say it did not ("0 errors", "no failures", "without error").
_NOT_A_FAILURE = re.compile(
    r"(?i)\b(?:0|no|zero|without|ignor(?:e|ed|ing))\s+(?:\w+\s+)?(?:errors?|failures?|exceptions?)\b"
    r"|\b(?:errors?|failures?|failed)\s*[:=]\s*0\b|\bon[_ ]error\b|\berror[_ ]rate\b"
    r"|\bretrying\b|\bwill retry\b|\bretry in\b|\bsucceeded\b|\bsuccessfully\b"
    r"|\b(?:if|unless|when|in case(?: of)?)\s+(?:there (?:is|are|was)\s+)?(?:an?\s+|any\s+)?(?:\w+\s+)?(?:errors?|failures?)\b"
)
# The program's own level says the line is not an error: info, debug, a warning (a Python warning too).
_NOT_ERROR_LEVELS = ("I", "W", "D", "INFO", "WARNING", "WARN", "DEBUG", "TRACE", "NOTICE")
_PY_WARNING = re.compile(r"\b[A-Z]\w*Warning: ")
_NORMAL_EVENT = re.compile(r"^\s*(?:\S+\s+)?Normal\s+[A-Z]\w+\s")  # a kubectl event row of type Normal

FRAME = re.compile(r'(?:^|\s)File "[^"\n]+", line \d+(?:, in |$)')

# A run that worked says so: a step or progress counter moved (step_forms.toml), or one of these.
_HEALTHY = re.compile(
    r"(?i)\bexit(?:ed)?(?: with)? (?:code|status):? 0\b|\bfinished successfully\b|\bcompleted successfully\b"
    r"|\btraining (?:finished|complete[d]?)\b|\bshutdown result: OK\b|\bConnected to distributed JAX controller\b"
    r"|\bHTTP/\d(?:\.\d)?\" 200\b|\b200 OK\b|\bApplication startup complete\b|\bUvicorn running on\b"
    r"|\bAvg (?:prompt|generation) throughput\b|\bLoss=\s*[\d.]+|\bloss[:=]\s*[\d.]+|^Ran \d+ tests? in [\d.]+s$|^OK$"
    r"|\b\d+ passed\b|\bPASSED\b|::\S+ (?:xfail|XPASS|PASSED)\b"
)


def failure_words(line: str) -> str | None:
    """The words of a line that read as a failure (``failed``, ``out of memory``, ``Killed``...), unless the line
    says the opposite around them or a benign rule names it; None when it reads as no failure."""
    body = unwrapped(line).strip()
    match = _FAILURE_WORDS.search(body)
    if match is None or _NOT_A_FAILURE.search(body) or is_benign(body, load_benign()):
        return None
    level = line_level(body)
    if (level is not None and level.upper() in _NOT_ERROR_LEVELS) or _PY_WARNING.search(body):
        return None  # the program itself said it was not an error
    return match.group(0)


def is_levelled(line: str) -> bool:
    """The program's own log line at a level below error (info, a warning): the excerpt shows it running."""
    body = unwrapped(line).strip()
    level = line_level(body)
    return ((level is not None and level.upper() in _NOT_ERROR_LEVELS) or _PY_WARNING.search(body) is not None
            or _NORMAL_EVENT.match(body) is not None)


def shows_health(line: str) -> bool:
    """The line says the run was working: a step moved, a request was served, the process exited cleanly."""
    body = unwrapped(line).strip()
    return match_step(body) is not None or _HEALTHY.search(body) is not None


def is_frame(line: str) -> bool:
    """A Python traceback's frame line (``File "x.py", line 3, in f``), under any launcher's prefix."""
    return FRAME.search(unwrapped(line)) is not None
