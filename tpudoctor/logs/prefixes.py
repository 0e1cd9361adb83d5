"""What tools put in front of a program's own line, taken off before any reader looks at it.

- terminal colours (ANSI escapes) and progress bars redrawn with carriage returns (the last state counts);
- ``kubectl logs --prefix``'s ``[pod/NAME/container]`` (the pod is the worker);
- launchers' and viewers' wrappers: Ray ``(pid=123, ip=...)``, vLLM ``(APIServer)``, torchrun ``[rank0]:``,
  MPI ``[1,0]<stderr>:``, Colab ``err:``, docker-compose ``name  | ``-style ``[name]``, xla_dist's
  ``2021-07-14 09:36:10 10.164.0.60 [0]`` and ``[5]``, a CI viewer's line numbers copied with the text
  (``351AssertionError: ...``), and rows copied from a log viewer whose severity
  column is the viewer's, not the program's (Vertex AI and the Cloud Logging console file every stderr line
  as ERROR, GoogleCloudPlatform/vertex-ai-samples#242; Colab's "View runtime logs" files it as WARNING).

The payload after them decides a line's level, time and fields. ``log_prefix`` takes off a C++ log line's own
prefix too (glog/absl ``E0110 18:36:27.929281    1590 file.cc:2121] ``, TensorFlow C++'s ``2020-05-04
09:05:40.721128: E    1578 tensorflow/.../xla_util.cc:76] ``) for readers of what the program printed through it,
e.g. an out-of-memory listing logged one line at a time (pytorch/xla#1965).
"""

from __future__ import annotations

import re

# glog/absl's time head (``E0110 18:36:27.929281``): month, day, hour, minute, second, fraction; logs.clock reads the
# time with it, LOG_PREFIX below takes the whole prefix off
GLOG = re.compile(r"[IWEF](\d\d)(\d\d) +(\d\d):(\d\d):(\d\d)(?:\.(\d+))?")
# a C++ log line's whole prefix, through the ``] `` after its file:line; the thread id is optional (some TensorFlow
# C++ builds print one, pytorch/xla#1965, others not, pytorch/xla#3470)
LOG_PREFIX = re.compile(
    r"(?:" + GLOG.pattern + r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: [IWEF])"
    r" +(?:(?P<thread>\d+) +)?(?P<source>[^\s\]]+:\d+)\](?: |$)")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
KUBECTL_PREFIX = re.compile(r"\[pod/([^/\]\s]+)(?:/[^\]\s]*)?\] ")
_CONSOLE_ROW = (
    r"(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY) +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?"
    r" [+-]\d{4} +[\w.-]+ +"
    r"|[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d\d:\d\d [AP]M(?: \| |\t)(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?: \| |\t)"
)
WRAPPER = re.compile(
    r"^(?:\([^()\n]*\bpid=\d+[^()\n]*\)\s+|\([A-Z][A-Za-z0-9_]*\)\s+(?=\S)|\[(?:rank|default)\d+\]:\s*"
    r"|\[\d+,\d+\]<std(?:out|err)>:\s*|(?:err|out):\s+"
    r"|\[(?!(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\])[A-Za-z][\w .-]*\]\s+(?=\S)"
    r"|(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d{1,3}(?:\.\d{1,3}){3} )?\[\d{1,4}\]\s+(?=\S)"
    r"|\d{1,6}(?=Traceback \(|FAIL: |ERROR: |[A-Z]\w*(?:Error|Exception): )"  # a CI viewer's line numbers, glued on
    r"|" + _CONSOLE_ROW + r")"
)


def clean(raw: str) -> str:
    """A line without its newline, its colours, and the earlier states of a redrawn progress bar."""
    if "\r" in raw:
        raw = raw.rstrip("\r\n").rsplit("\r", 1)[-1]
    line = raw.rstrip("\n")
    if "\x1b" in line:
        line = ANSI.sub("", line)
    return line


def kubectl_worker(line: str) -> tuple[str | None, str]:
    """(pod, the rest) of a ``kubectl logs --prefix`` line; (None, line) without the prefix."""
    if line[:5] == "[pod/":
        m = KUBECTL_PREFIX.match(line)
        if m:
            return m.group(1), line[m.end():]
    return None, line


def unwrapped(line: str) -> str:
    """The program's own line inside up to two launcher/viewer wrappers."""
    for _ in range(2):
        match = WRAPPER.match(line)
        if match is None:
            break
        line = line[match.end():]
    return line


def program_line(line: str) -> str:
    """``unwrapped(line)`` with the line's own indentation kept: a wrapper is followed by one space (``[rank0]: ``,
    ``(pid=123) ``), and what the program printed after it may begin with spaces that mean something (the items
    of a listing); ``unwrapped`` takes them with the wrapper."""
    inner = unwrapped(line)
    if len(inner) == len(line):
        return line
    wrapper = line[:len(line) - len(inner)].rstrip()
    if len(line) - len(wrapper) > len(inner):  # the wrapper ended in spaces: one of them was its separator
        return line[len(wrapper) + 1:]
    return inner


def log_prefix(line: str) -> tuple[str | None, str]:
    """(who printed it, the payload) of a glog/absl or TensorFlow C++ line: ``"1590 file.cc:2121"`` (thread and
    file:line, the thread left out where the line has none) and the text after ``] `` exactly as the program wrote
    it, leading spaces included; (None, line) for a line without that prefix."""
    if line[:1] not in "IWEF0123456789" or (m := LOG_PREFIX.match(line)) is None:
        return None, line
    source = m.group("source") if m.group("thread") is None else f"{m.group('thread')} {m.group('source')}"
    return source, line[m.end():]


def payload(line: str) -> str:
    """The text after a glog/absl or TensorFlow C++ log prefix, indentation kept; the line itself without one."""
    return log_prefix(line)[1]
