"""Which log events are error-level, by their structure rather than their words.

A log is PASS only when it holds no error-level event. An event is error-level when one of its
lines is, and a line is error-level by the form a runtime prints it in:

- a level prefix that says so: glog/absl ``E``/``F`` (``E0501 10:00:01.000000 42 file.cc:9]``,
  ``E0000 00:00:1751448150.986970``), TensorFlow C++ (``2023-10-09 13:36:23.355516: E ...``), Python
  logging (``ERROR:absl:``, ``... - ERROR - ...``, ``| CRITICAL |``, ``ERROR 11-21 04:27:48``);
- and, on lines without an info/warning prefix: an exception line in any of its forms (``Name: msg``,
  ``Name:`` with the message on the next lines, a bare ``Exception:``, ``Error: ...``, a repr
  ``<NameError: ...>``, an IPython ``Name   Traceback (most recent call last)`` header), a traceback,
  ``Check failed``, a fatal signal dump, a non-zero exit, a gRPC/absl error status
  (``DEADLINE_EXCEEDED: ...``, ``StatusCode.UNAVAILABLE``) and the fragments of XLA's out-of-memory report.

Lines that healthy runs print at error level (a CUDA plugin registering twice on a TPU VM, say) are
listed in ``benign.toml`` (``tpudoctor.logdiag.benign``), each with the public source that shows it is
harmless; they do not count.
This module only marks events; naming the cause is the signature catalog's job.
"""

from __future__ import annotations

import dataclasses
import re

from tpudoctor.logdiag.benign import BenignLine, is_benign, load_benign
from tpudoctor.logs.prefixes import unwrapped as _unwrapped

# How strongly a mark says the job failed; the finding quotes the strongest mark of a log.
CRASH = 3  # a traceback, a fatal line, a failed check, a signal, a non-zero exit, an OOM report
EXCEPTION = 2  # an exception line outside a traceback, ``Error: ...``, an exception's repr
ERROR_LINE = 1  # an error-level log line, a gRPC/absl error status

_GLOG = re.compile(r"^([IWEF])\d{4}\s+\d\d:\d\d:\d+(?:\.\d+)?\s+\S")
_TF_CPP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: ([IWEF]) ")
_TF_CPP_OLD = re.compile(r"^([IWEF]) [\w./\\-]+\.(?:cc|cpp|h|py):\d+\] ")  # TensorFlow before 1.3: no timestamp
_LEVEL_WORDS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|NOTICE|TRACE"
_LEVEL_FIRST = re.compile(rf"^\[?({_LEVEL_WORDS})\]?(?=[:\s\]]|$)")
_TIMESTAMP_FIRST = re.compile(
    r"^\[?(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?|[A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d)\]?"
    r"|^\[\d+\.\d+\](?=  )"  # elapsed seconds, then the date and level columns (mpytools/pypower logging)
)
_LEVEL_AFTER_TIMESTAMP = re.compile(rf"(?:^|[\s\[|(:-])({_LEVEL_WORDS})(?=[\s\]|):-]|$)")
_ERROR_LEVELS = {"E", "F", "ERROR", "CRITICAL", "FATAL"}
# TPUEstimator logs the error that stops training at INFO level, then re-raises it (tensorflow/tensorflow#24099).
_ESTIMATOR_ERROR = re.compile(r"Error recorded from (?:training_loop|infeed|outfeed): \S")
_CRASH_LEVELS = {"F", "CRITICAL", "FATAL"}

_TRACEBACK = "Traceback (most recent call last):"
_IPYTHON_HEADER = re.compile(r"^[\w.]+\s{2,}Traceback \(most recent call last\)")
_EXCEPTION_NAME = r"(?:[A-Za-z_]\w*\.)*(?:_?[A-Z]\w*)?(?:Error|Exception|Failure|Interrupt)"
_EXCEPTION_LINE = re.compile(rf"^({_EXCEPTION_NAME})(?: \(see above for traceback\))?(?::(?:\s.*)?|\s*)$")
_QUALIFIED_EXCEPTION = re.compile(r"^(?:[a-z_][a-z0-9_]*\.){2,}[A-Z][a-z]\w*: \S")  # BrokenProcessPool
_SYSTEM_EXIT = re.compile(r"^SystemExit: (?!0\s*$)\S")
_EXCEPTION_IN = re.compile(r"^Exception in (?:thread|device)\b")
_LOWER_ERROR = re.compile(r"^(?:error|ERROR|FATAL|fatal):\s+\S")
_REPR = re.compile(r"<(?:[\w.]+\.)?_?[A-Z]\w*(?:Error|Exception)\b[^>\n]*")
# An HTTP error as client libraries print it (googleapi: Error 403: ..., HTTP Error 404, 503 Service Unavailable,
# TensorFlow's GCS file system: "Error executing an HTTP request: HTTP response code 503").
# The Cloud TPU API words its 400s "Cloud TPU received a bad request." (also inside gcloud's INVALID_ARGUMENT).
_HTTP_ERROR = re.compile(r"\b(?:Error|HTTP(?:Error)?|HttpError|HTTP response code) [45]\d\d\b|\b[45]\d\d (?:Forbidden|Not Found|Unauthorized|"
                         r"Too Many Requests|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Timeout|Bad Request)\b"
                         r"|\breceived a bad request\b")
# Something "failed:" (or "is Failed :"), the wording of a caught error re-printed by a program.
_FAILED_COLON = re.compile(r"(?i)\bfailed\s*:(?!\s*0\b)")
# A structured (JSON) log line at error level: GKE, Cloud Logging exports, structlog.
_JSON_ERROR = re.compile(r'"(?:severity|level|levelname)"\s*:\s*"(?i:error|critical|fatal|alert|emergency)"')
# TensorFlow op errors: the kernel lookup that failed, and the ``[Op:...]`` tail of an op's error message.
_OP_ERROR = re.compile(r"No registered '\w+' OpKernel for |\[Op:__\w+\]")
_STATUS_NAMES = (
    "CANCELLED|UNKNOWN|INVALID_ARGUMENT|DEADLINE_EXCEEDED|NOT_FOUND|ALREADY_EXISTS|PERMISSION_DENIED|"
    "RESOURCE_EXHAUSTED|FAILED_PRECONDITION|ABORTED|OUT_OF_RANGE|UNIMPLEMENTED|INTERNAL|UNAVAILABLE|DATA_LOSS|"
    "UNAUTHENTICATED"
)
_STATUS = re.compile(rf"(?:^|[\s:(\[])(?:{_STATUS_NAMES}):\s*\S")
_STATUS_CODE = re.compile(r"StatusCode\.(?!OK\b)[A-Z_]{4,}|\"grpc_status\":\s*[1-9]")
_CRASH_TEXT = re.compile(
    r"Check failed|CHECK failed|\[libprotobuf FATAL\b|\*\*\* SIG[A-Z]+\b|\*\*\* Received signal \d+|Fatal Python error:|Segmentation fault"
    r"|\(core dumped\)|^Aborted\b|^Bus error\b|terminate called after throwing|Signals\.SIG(?:KILL|SEGV|ABRT|BUS)"
    r"|^Illegal instruction\b|^Floating point exception\b|Check failure stack trace|Assertion `.*' failed"
    r"|^panic: |Your session crashed"
    r"|received signal SIG[A-Z]+|^Killed\s*$|Out of memory: Kill|OOMKilled"
    r"|Ran out of memory in memory space|Total hbm usage >=|Program hbm requirement|Largest program allocations in"
    r"|^\s*Allocation type: HLO temp|Out of memory while trying to allocate"
)
# Test runners' verdicts: pytest's ``FAILED path::test - Error: ...`` / ``ERROR path`` rows and its
# ``=== 1 failed, 3 passed in 2.1s ===`` summary, unittest's ``FAIL: test_x (Case)`` and ``FAILED (errors=1)``,
# bazel's ``//pkg:target FAILED in 3.2s``, ``FAIL: //pkg:target``, ``Executed 1 out of 1 test: 1 fails locally.``
# and its progress line's ``216 failed;``, and a CI step's ``##[error]`` annotation. (xfailed/xpassed are not failures.)
_TEST_FAILED = re.compile(
    r"^(?:FAILED|ERROR) \S+\.py(?:::\S+)?(?: - .*)?$|^(?:FAIL|ERROR): test\w* \(|^FAILED \((?:failures|errors)=[1-9]"
    r"|^=+ (?:.*, )?[1-9]\d* (?:failed|errors?)\b.* in [\d.]+s|^//\S+ +(?:\([^)]*\) +)?(?:FAILED|TIMEOUT|NO STATUS)\b"
    r"|^FAIL: [/@]\S+|^Executed \d+ out of \d+ tests?: .*\b[1-9]\d* (?:fails?|failed)\b|\btests, [1-9]\d* failed\b"
    r"|^##\[error\]|^::error\b"
)
# API servers and controllers refusing a request: Kubernetes (``The Job "x" is invalid: spec...``,
# ``Error from server (Forbidden): ...``, ``admission webhook "..." denied the request``, a ``Status`` body with
# ``"status":"Failure"``), and ``kubectl get events`` / ``describe`` rows of type Warning with a failure reason.
_REJECTED = re.compile(
    r"\bis invalid: |^Error from server \(\w+\)|\badmission webhook \S+ denied the request\b"
    r"|\"kind\":\s*\"Status\".*\"status\":\s*\"Failure\""
)
_EVENT_ROW = re.compile(
    r"^\s*(?:\S+\s+)?Warning\s+(?:FailedScheduling|Evicted|BackOff|Failed|FailedMount|FailedAttachVolume|FailedCreate"
    r"|FailedCreatePodSandBox|OOMKilling|FailedKillPod|FailedPreStopHook|NodeNotReady|Unhealthy|FailedSync"
    r"|NotTriggerScaleUp|FailedJob|BackoffLimitExceeded|DeadlineExceeded)\s"
)

# A supervisor reporting that the process it watched died without a word of its own: Jupyter/Colab
# restarting a dead kernel, torchelastic starting a worker group again (attempt_N counts restarts from 0).
_RESTARTED = re.compile(r"KernelRestarter: restarting kernel|/attempt_[1-9]\d*/\d+/error\.json")
# A runtime warning that the program may be stuck (the only trace a hung TPU program leaves).
_STALL = re.compile(r"\bdeadlock\b")
_EXIT = re.compile(
    r"(?i)\bexit(?:ed)?[ _]?(?:with )?(?:exit )?(?:code|status)\s*[:=]?\s*(-?\d+)"
    r"|\bterminated with (?:exit )?(?:code|status)\s*[:=]?\s*(-?\d+)|\bexitcode\s*:\s*(-?\d+)"
)

# Substrings without which no line of a batch can be error-level (one cheap pass over a batch).
_TRIGGERS = (
    "rror", "ERROR", "xception", "ailure", "nterrupt", "FATAL", "CRITICAL", "atal", "Check failed", "SIG", "ignal",
    "egmentation", "dumped", "bort", "Bus error", "erminat", "Kill", "xit", "EXIT", "_EXCEEDED", "UNAVAILABLE",
    "NOT_FOUND", "INVALID_ARGUMENT", "INTERNAL", "UNKNOWN", "ABORTED", "CANCELLED", "DENIED", "EXHAUSTED",
    "PRECONDITION", "OUT_OF_RANGE", "UNIMPLEMENTED", "DATA_LOSS", "UNAUTHENTICATED", "ALREADY_EXISTS", "StatusCode",
    "grpc_status", "hbm", "emory", "Allocation type", "OpKernel", "[Op:", "Traceback", "panic", "Illegal",
    "Floating", "Assertion", "crashed", "severity", "level", "ailed", "AILED", "Forbidden", "Not Found",
    "Unauthorized", "Too Many", "Server Error", "Bad Gateway", "Unavailable", "Timeout", "bad request", "Bad Request",
    "KernelRestarter", "attempt_", "deadlock", "FAIL", "##[error]", "::error", "invalid", "Error from server",
    "denied", "Warning", "\"Failure\"", "fails locally", "illed", "ails ", '", line ',
)
# Error-level glog/absl lines (month 01-12) and TensorFlow C++ lines, by substrings.
_LEVEL_TRIGGERS = ("\nE0", "\nE1", "\nF0", "\nF1", ": E ", ": F ", "\nE ", "\nF ", ") E0", ") E1", ") F0", ") F1", ": E0", ": E1", ": F0",
                   ": F1")


@dataclasses.dataclass(frozen=True)
class ErrorMark:
    """An error-level line of an event: where it is, what kind of line it is, how strong."""

    offset: int
    """Character offset of the line in the event's text."""
    line: str
    kind: str
    """A few words for a person: ``a traceback``, ``an error log line``, ``a non-zero exit`` ..."""
    strength: int


TRIGGERS = _TRIGGERS
LEVEL_TRIGGERS = _LEVEL_TRIGGERS
LINE_START_TRIGGERS = (b"E0", b"E1", b"F0", b"F1", b"E ", b"F ")
"""An error-level glog/TensorFlow line at the very start of a text (the level triggers look after a newline)."""


def may_hold(text: str) -> bool:
    """Cheap pre-filter: could any line of ``text`` be error-level?"""
    return (any(t in text for t in _TRIGGERS) or any(t in text for t in _LEVEL_TRIGGERS)
            or text.startswith(("E0", "E1", "F0", "F1", "E ", "F ")))


def line_level(line: str) -> str | None:
    """The level a line's prefix gives it (``E``, ``ERROR``, ``INFO`` ...), or None without a prefix."""
    for pattern in (_GLOG, _TF_CPP, _TF_CPP_OLD, _LEVEL_FIRST):
        match = pattern.match(line)
        if match is not None:
            return match.group(1)
    stamp = _TIMESTAMP_FIRST.match(line)
    if stamp is not None:
        level = _LEVEL_AFTER_TIMESTAMP.search(line, stamp.end(), stamp.end() + 80)
        if level is not None:
            return level.group(1)
    return None


# Why JAX's start-up probe found a backend absent: the platform is not built into this jaxlib or its
# library is not installed (a CPU or GPU host). A probe that found a TPU busy or broken says more.
_ABSENT_BACKEND = re.compile(
    r"Unable to initialize backend '\w+': (?:[A-Z_]+: )?(?:TpuPlatform is not available|Failed to open libtpu\.so"
    r"|Unable to find driver in registry|Could not find registered platform|module 'jaxlib\.\S+' has no attribute)"
)


def is_absent_backend_probe(line: str) -> bool:
    """JAX's info-level note that a backend is not installed on this host
    (``I... xla_bridge.py] Unable to initialize backend 'tpu': ... TpuPlatform is not available``)."""
    if "Unable to initialize backend '" not in line or not _ABSENT_BACKEND.search(line):
        return False
    level = line_level(_unwrapped(line))
    return level is not None and level.upper() in ("I", "INFO", "DEBUG")


def opens_message(line: str) -> bool:
    """An unprefixed line whose message may go on over the next lines: an exception line
    (``RuntimeError:`` then the message) or an error status (``DEADLINE_EXCEEDED: ...`` then ``RPC: ...``)."""
    body = _unwrapped(line)
    return bool(_is_exception_line(body) or _LOWER_ERROR.match(body) or _STATUS.match(body))


def _exit_code(match: re.Match[str]) -> int | None:
    for group in match.groups():
        if group is not None:
            return int(group)
    return None


def mark_line(raw: str) -> tuple[str, int] | None:
    """(kind, strength) of one line, or None when it is not error-level."""
    line = _unwrapped(raw)
    if "Error recorded from" in line and _ESTIMATOR_ERROR.search(line):
        return ("an error", EXCEPTION)
    level = line_level(line)
    if level is not None:
        level = level.upper()
        if level in _CRASH_LEVELS:
            return ("a fatal log line", CRASH)
        if level not in _ERROR_LEVELS:
            if level in ("W", "WARNING", "WARN") and _STALL.search(line):
                return ("a stall warning", ERROR_LINE)
            if _RESTARTED.search(line):
                return ("a restarted process", CRASH)
            return None  # the runtime itself said info or warning
        body = line
    else:
        body = line.strip()
        if not body or not any(t in body for t in _TRIGGERS):
            return None
    if _RESTARTED.search(body):
        return ("a restarted process", CRASH)
    if _CRASH_TEXT.search(body):
        if "Kill" in body:
            return ("a killed process", CRASH)
        if "Check fail" in body or "CHECK fail" in body or "Assertion" in body or "libprotobuf FATAL" in body:
            return ("a failed check", CRASH)
        if body.startswith("panic: "):
            return ("a panic", CRASH)
        if "memory" in body or "hbm" in body or "Allocation type" in body:
            return ("an out-of-memory report", CRASH)
        return ("a fatal signal", CRASH)
    for exit_match in _EXIT.finditer(body):
        code = _exit_code(exit_match)
        if code:
            return ("a non-zero exit", CRASH)
    if level is None:
        if _IPYTHON_HEADER.match(body):
            return ("a traceback", CRASH)
        if "FAIL" in body or "ERROR" in body or "rror]" in body or "::error" in body or "tests, " in body:
            if _TEST_FAILED.search(body):
                return ("a failed test", EXCEPTION)
        if _REJECTED.search(body):
            return ("a rejected request", EXCEPTION)
        if "Warning" in body and _EVENT_ROW.match(body):
            return ("a failure event", EXCEPTION)
        if _is_exception_line(body) or _EXCEPTION_IN.match(body):
            return ("an exception", EXCEPTION)
        if _LOWER_ERROR.match(body):
            return ("an error line", EXCEPTION)
        if _REPR.search(body):
            return ("an exception", EXCEPTION)
        if _OP_ERROR.search(body):
            return ("an op error", EXCEPTION)
        if _STATUS.search(body) or _STATUS_CODE.search(body):
            return ("an error status", ERROR_LINE)
        if _JSON_ERROR.search(body):
            return ("an error log line", ERROR_LINE)
        if _HTTP_ERROR.search(body):
            return ("an HTTP error", ERROR_LINE)
        if _FAILED_COLON.search(body):
            return ("an error line", ERROR_LINE)
        return None
    return ("an error log line", ERROR_LINE)


# The words of a failure a program printed without an exception class or a level, as users paste it:
# "Failed to connect to the TPU", "Could not find a TPU", "Unable to initialize backend 'tpu'". Read only
# in pasted excerpts of a few lines (a long healthy log says "not found" in passing).
_BARE_FAILURE = re.compile(
    r"(?i)\b(?:failed to|failed with|failure|fatal|cannot|can't|could not|couldn't|unable to|not found|no such|"
    r"denied|refused|forbidden|invalid|not allowed|not supported|unsupported|timed out|exceeded|exhausted|"
    r"crashed|aborted|killed|out of memory|does not exist|doesn't exist|not compatible|incompatible|"
    r"mismatch)\b"
)
_BARE_HEALTHY = re.compile(r"(?i)\b(?:0 errors|no errors?|without errors?|succeeded|successfully|passed|retrying|will retry|retry in)\b")


def is_bare_failure(line: str) -> bool:
    """A line of a pasted excerpt whose own words say something failed (and whose level does not say info)."""
    body = _unwrapped(line).strip()
    level = line_level(body)
    if level is not None and level.upper() in ("I", "W", "INFO", "WARNING", "WARN", "DEBUG", "TRACE", "NOTICE"):
        return False  # the program itself said it was not an error
    if "Unable to initialize backend '" in body and _ABSENT_BACKEND.search(body):
        return False  # JAX's probe of a backend this host lacks, its level cut off
    return bool(_BARE_FAILURE.search(body)) and not _BARE_HEALTHY.search(body) and not is_benign(body, load_benign())


def is_ipython_traceback(line: str) -> bool:
    """The header of an IPython/Colab traceback: ``ValueError      Traceback (most recent call last)``."""
    return _IPYTHON_HEADER.match(line) is not None


def is_exception_line(line: str) -> bool:
    """``Name: message``, ``Name:`` or a bare ``Name`` of an exception (``SystemExit: 0`` is not one)."""
    return _is_exception_line(line)


def _is_exception_line(line: str) -> bool:
    return bool(_EXCEPTION_LINE.match(line) or _QUALIFIED_EXCEPTION.match(line) or _SYSTEM_EXIT.match(line))


def _traceback_line(lines: list[str]) -> tuple[int, bool]:
    """The index of a traceback's exception line: the last exception-shaped line, else the first
    unindented line after the frames; False with the last line when there is none (the paste was cut)."""
    for i in range(len(lines) - 1, 0, -1):
        if _is_exception_line(lines[i]):
            return i, True
    for i in range(1, len(lines)):
        if lines[i] and not lines[i][0].isspace() and not lines[i].startswith(_TRACEBACK):
            return i, True
    return len(lines) - 1, False


CUT_TRACEBACK = "a traceback cut before its exception line (the excerpt stops inside it; the error itself is missing)"


def find(text: str, *, benign: tuple[BenignLine, ...] | None = None, given_level: str | None = None) -> ErrorMark | None:
    """The strongest error-level line of one event's text (the first of equals), or None.

    A traceback's mark is its exception line. ``given_level`` is a severity the source gave the whole
    event (Cloud Logging's ``ERROR``).
    """
    benign = load_benign() if benign is None else benign
    lines = text.split("\n")
    offsets = []
    at = 0
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    if lines[0].startswith(_TRACEBACK) or _IPYTHON_HEADER.match(lines[0]):
        i, complete = _traceback_line(lines)
        if not is_benign(lines[i], benign):
            return ErrorMark(offsets[i], lines[i], "a traceback" if complete else CUT_TRACEBACK, CRASH)
        return None
    best: ErrorMark | None = None
    for i, line in enumerate(lines):
        marked = mark_line(line)
        if marked is None or (best is not None and marked[1] <= best.strength) or is_benign(line, benign):
            continue
        best = ErrorMark(offsets[i], line, marked[0], marked[1])
    if best is None and given_level and given_level.upper() in _ERROR_LEVELS | {"ALERT", "EMERGENCY"}:
        first = next((i for i, line in enumerate(lines) if line.strip()), 0)
        if not is_benign(lines[first], benign):
            best = ErrorMark(offsets[first], lines[first], "an error log entry", ERROR_LINE)
    return best
