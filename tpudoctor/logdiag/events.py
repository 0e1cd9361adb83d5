"""Groups a stream of log lines into events: one log record, or one whole Python traceback.

Streaming and bounded: an event keeps at most ``MAX_HEAD_LINES`` lines from its start and
the last ``MAX_TAIL_LINES`` after that (where the exception line of a long traceback sits). Lines come
from ``tpudoctor.logs.sources`` (overlong ones as overlapping windows); times from ``tpudoctor.logs.clock``.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from collections.abc import Iterable, Iterator

from tpudoctor.logdiag.errorlevel import is_exception_line, is_ipython_traceback, opens_message
from tpudoctor.logs.clock import stamp_text
from tpudoctor.logs.prefixes import log_prefix
from tpudoctor.logs.sources import MAX_LINE_CHARS, LinePiece, windows

MAX_HEAD_LINES = 120
MAX_TAIL_LINES = 40
MAX_MESSAGE_LINES = 150
"""Unprefixed lines after a traceback's exception line, or after a prefixed record, that still
belong to its message."""



# A line that starts a new log record (as opposed to continuing the previous one).
RECORD_START = re.compile(
    r"""^(?:
        [IWEF]\d{4}\s+\d\d:\d\d:\d\d\.\d+            # glog (libtpu, TensorFlow C++): I1129 20:15:01.123456
      | \d{4}-\d\d-\d\d[T\ ]\d\d:\d\d:\d\d            # ISO or Python logging asctime
      | \[\d{4}-\d\d-\d\d                             # [2024-01-01 ...]
      | \[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?[:\s]   # Python logging, absl
      | [A-Z][a-z]{2}\ +\d+\ \d\d:\d\d:\d\d           # syslog: Nov 29 20:15:01
      | Traceback\ \(most\ recent\ call\ last\)
      | \*\*\*\ SIG[A-Z]+\b                           # absl failure signal handler: *** SIGSEGV ... stack trace: ***
      | Fatal\ Python\ error:                         # faulthandler
    )""",
    re.VERBOSE,
)
TRACEBACK_START = "Traceback (most recent call last):"
_CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)


@dataclasses.dataclass
class LogEvent:
    """One record or traceback, with the line number (1-based) of its first line."""

    lines: list[str]
    first_line_no: int
    last_line_no: int
    given_timestamp: str | None = None
    """Timestamp given by the source (Cloud Logging); otherwise read from the first line."""
    dropped_lines: int = 0
    severity: str | None = None
    """Severity given by the source (Cloud Logging), when there is one."""
    numbered: bool = True
    """False for sources without line numbers (Cloud Logging entries)."""
    line_numbers: list[int] | None = None
    """The source line number of each entry of ``lines`` (windows of one long line share one)."""

    @property
    def timestamp(self) -> str | None:
        if self.given_timestamp:
            return self.given_timestamp
        return stamp_text(self.lines[0]) if self.lines else None

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def line_no_at(self, offset: int) -> int:
        """The source line number of a character offset in ``text``."""
        before = self.text.count("\n", 0, offset)
        if self.line_numbers is not None:
            return self.line_numbers[min(before, len(self.line_numbers) - 1)]
        if before >= MAX_HEAD_LINES and self.dropped_lines:
            before += self.dropped_lines
        return self.first_line_no + before


class _Builder:
    __slots__ = ("head", "tail", "first", "last", "dropped", "in_traceback", "message_lines", "last_text",
                 "prefixed", "ipython", "head_numbers", "tail_numbers")

    def __init__(self, line: str, line_no: int, in_traceback: bool, prefixed: bool):
        self.head: list[str] = [line]
        self.head_numbers: list[int] = [line_no]
        self.tail: collections.deque[str] | None = None
        self.tail_numbers: collections.deque[int] | None = None
        self.first = line_no
        self.last = line_no
        self.dropped = 0
        self.in_traceback = in_traceback  # True while reading frames, False once the exception line came
        self.message_lines = 0
        self.last_text = line
        self.prefixed = prefixed
        self.ipython = False  # an IPython traceback: unindented frames, then the exception line

    def add(self, line: str, line_no: int) -> None:
        self.last = line_no
        if line.strip():
            self.last_text = line
        if len(self.head) < MAX_HEAD_LINES:
            self.head.append(line)
            self.head_numbers.append(line_no)
            return
        if self.tail is None:
            self.tail = collections.deque(maxlen=MAX_TAIL_LINES)
            self.tail_numbers = collections.deque(maxlen=MAX_TAIL_LINES)
        if len(self.tail) == MAX_TAIL_LINES:
            self.dropped += 1
        self.tail.append(line)
        self.tail_numbers.append(line_no)  # type: ignore[union-attr]

    def finish(self) -> LogEvent:
        lines = self.head + list(self.tail) if self.tail else self.head
        numbers = self.head_numbers + list(self.tail_numbers) if self.tail_numbers else self.head_numbers
        return LogEvent(lines, self.first, self.last, None, self.dropped, line_numbers=numbers)


class Gap:
    """Lines a prefilter proved hold nothing to diagnose, skipped unread: they end the event before them."""

    __slots__ = ("lines",)

    def __init__(self, lines: int):
        self.lines = lines


def _pieces(lines: Iterable[str | Gap]) -> Iterator[str | Gap]:
    """Lines held in memory that are overlong, split into windows as ``bounded_lines`` reads them."""
    for raw in lines:
        if isinstance(raw, Gap):
            yield raw
        elif len(raw) > MAX_LINE_CHARS + 2 and not isinstance(raw, LinePiece):
            yield from windows(raw.rstrip("\r\n"))
        else:
            yield raw


def group_events(lines: Iterable[str | Gap], first_line_no: int = 1) -> Iterator[LogEvent]:
    """Yield events from raw lines (with or without trailing newlines), in order.

    A bare exception line or error status outside a traceback (``...UnavailableError: ...``,
    ``DEADLINE_EXCEEDED: ...``) opens a message: the unprefixed lines after it (an XLA memory report,
    a gRPC error block, ``RPC: ...``) belong to it, as after a prefixed record.
    """
    current: _Builder | None = None
    is_traceback = False  # the current event is a traceback
    line_no = first_line_no - 1
    for raw in _pieces(lines):
        if isinstance(raw, Gap):
            if current is not None:
                yield current.finish()
                current, is_traceback = None, False
            line_no += raw.lines
            continue
        if isinstance(raw, LinePiece):  # a window of the line before: same line number
            piece = raw.rstrip("\r\n")
            if current is not None and len(current.head) < MAX_HEAD_LINES:
                current.add(piece, line_no)
                continue
            if current is not None:
                yield current.finish()
            current = _Builder(piece, max(line_no, first_line_no), in_traceback=False, prefixed=False)
            is_traceback = False
            continue
        line_no += 1
        line = raw.rstrip("\r\n")
        if line.startswith(TRACEBACK_START):
            if current is not None and is_traceback and current.last_text.strip() in _CHAIN_MARKERS:
                current.add(line, line_no)
                current.in_traceback = True
                continue
            if current is not None:
                yield current.finish()
            current = _Builder(line, line_no, in_traceback=True, prefixed=True)
            is_traceback = True
            continue
        starts_record = line[:1].isspace() is False and RECORD_START.match(line) is not None
        if is_ipython_traceback(line):
            if current is not None:
                yield current.finish()
            current = _Builder(line, line_no, in_traceback=True, prefixed=True)
            current.ipython = is_traceback = True
            continue
        if current is None:
            current = _Builder(line, line_no, in_traceback=False,
                               prefixed=starts_record or opens_message(line))
            is_traceback = False
            continue
        if is_traceback:
            if _continues_traceback(current, line, line_no, starts_record):
                continue
        elif not starts_record and (
            (not line or line[0].isspace())
            or (current.prefixed and current.message_lines < MAX_MESSAGE_LINES)
        ):
            # A blank or indented line continues the record; so do unprefixed lines after a
            # prefixed record (glog and gRPC print multi-line messages that way).
            current.message_lines += 1
            current.add(line, line_no)
            continue
        elif (starts_record and current.prefixed and current.message_lines < MAX_MESSAGE_LINES
              and _continues_glog_message(current.head[0], line)):
            current.message_lines += 1
            current.add(line, line_no)
            continue
        yield current.finish()
        current = _Builder(line, line_no, in_traceback=False,
                           prefixed=starts_record or opens_message(line))
        is_traceback = False
    if current is not None:
        yield current.finish()


def _continues_glog_message(first: str, line: str) -> bool:
    """``line`` goes on the glog message ``first`` opened: the same thread and file:line, its payload blank or
    indented (libtpu prints an out-of-memory listing one log line at a time: AI-Hypercomputer/torchprime#28,
    pytorch/xla#1965)."""
    source, payload = log_prefix(line)
    if source is None or (payload.strip() and not payload[0].isspace()):
        return False
    return source == log_prefix(first)[0]


def _continues_traceback(current: _Builder, line: str, line_no: int, starts_record: bool) -> bool:
    """Add ``line`` to the traceback ``current`` when it belongs to it: a frame, the exception line, or its message."""
    if current.in_traceback and current.ipython and not starts_record:
        # IPython's frames are not indented: the exception line ends them.
        current.add(line, line_no)
        if is_exception_line(line):
            current.in_traceback = False
        return True
    if current.in_traceback and not current.ipython:
        # Frames are indented; the first unindented line is the exception itself.
        current.add(line, line_no)
        if line and not line[0].isspace():
            current.in_traceback = False
        return True
    if not starts_record and current.message_lines < MAX_MESSAGE_LINES:
        current.message_lines += 1
        current.add(line, line_no)
        return True
    return False
