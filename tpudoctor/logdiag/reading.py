"""Reading log sources: any readable stream (a file, a FIFO, ``-`` or ``/dev/stdin``, ``<(cmd)``) or a
folder of logs, each told apart as text, empty or binary before a line of it is diagnosed.

What was read is returned with the findings' scan so that a check never calls a log clean that it
did not read: an empty source or a binary one is its own result, never a PASS.
"""

from __future__ import annotations

import dataclasses
import io
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO

from tpudoctor.findings import Scope
from tpudoctor.logdiag.events import bounded_lines

SNIFF_BYTES = 8192
MAX_FOLDER_FILES = 200
_TEXT_CONTROLS = {9, 10, 12, 13, 27, 8}  # tab, newline, form feed, carriage return, ESC (colours), backspace


@dataclasses.dataclass(frozen=True)
class SourceRead:
    """What reading one log source found."""

    source: str
    lines: int
    state: str
    """``text``, ``empty`` (no byte at all), ``binary`` (not a text log) or ``unreadable``."""
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "lines": self.lines, "state": self.state}
        if self.reason:
            out["reason"] = self.reason
        return out


def binary_reason(head: bytes) -> str | None:
    """Why the first bytes of a source are not a text log, or None when they look like one."""
    nul = head.find(b"\x00")
    if nul >= 0:
        return f"holds NUL bytes (the first at byte {nul}): not a text log"
    controls = sum(1 for b in head if b < 32 and b not in _TEXT_CONTROLS)
    if head and controls > len(head) // 10:
        return f"{100 * controls // len(head)}% of its first {len(head):,} bytes are control characters: not a text log"
    undecodable = head.decode("utf-8", errors="replace").count("\ufffd")
    if head and undecodable > len(head) // 10:
        return f"{undecodable:,} of its first {len(head):,} bytes are not UTF-8: not a text log"
    return None


def feed_stream(diagnoser: Any, stream: BinaryIO, source: str, *, scope: Scope | None = None) -> SourceRead:
    """Diagnose one byte stream (peeked, never rewound: FIFOs and pipes read once)."""
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream, 1 << 16)  # type: ignore[arg-type]
    head = buffered.peek(SNIFF_BYTES)[:SNIFF_BYTES]
    if not head:
        return SourceRead(source, 0, "empty", "is empty: there is nothing to diagnose")
    reason = binary_reason(head)
    if reason is not None:
        return SourceRead(source, 0, "binary", reason)
    before = diagnoser.lines_scanned
    text = io.TextIOWrapper(buffered, encoding="utf-8", errors="replace")
    try:
        diagnoser.feed_lines(bounded_lines(text), source, scope=scope)
    finally:
        text.detach()
    return SourceRead(source, diagnoser.lines_scanned - before, "text")


def feed_path(diagnoser: Any, path: str, *, scope: Scope | None = None) -> list[SourceRead]:
    """Diagnose what ``path`` names: ``-`` (stdin), a file, a FIFO or device, or every file of a folder."""
    if path == "-":
        raw = getattr(sys.stdin, "buffer", None)
        if raw is None:  # a text stream put in place of stdin (an embedding program, a test)
            before = diagnoser.lines_scanned
            diagnoser.feed_lines(bounded_lines(sys.stdin), "<stdin>", scope=scope)
            return [SourceRead("<stdin>", diagnoser.lines_scanned - before, "text")]
        return [feed_stream(diagnoser, raw, "<stdin>", scope=scope)]
    if os.path.isdir(path):
        files = sorted(p for p in Path(path).iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            return [SourceRead(path, 0, "empty", "is a folder without log files")]
        return [read for p in files[:MAX_FOLDER_FILES] for read in feed_path(diagnoser, str(p), scope=scope)]
    try:
        with open(path, "rb") as handle:
            return [feed_stream(diagnoser, handle, path, scope=scope)]
    except OSError as exc:
        return [SourceRead(path, 0, "unreadable", f"cannot be read: {exc.strerror or exc}")]


def readable_problem(path: str) -> str | None:
    """Why ``path`` cannot be read as a log here (missing, unreadable), or None. Any readable stream is fine."""
    if path == "-":
        return None
    if not os.path.exists(path):
        return "no such file or folder"
    if not os.access(path, os.R_OK):
        return "not readable (check its permissions)"
    return None
