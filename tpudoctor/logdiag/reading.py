"""Reading log sources: any readable stream (a file, a FIFO, ``-`` or ``/dev/stdin``, ``<(cmd)``) or a
folder of logs, each told apart as text, empty or binary before a line of it is diagnosed.

What was read is returned with the findings' scan so that a check never calls a log clean that it
did not read: an empty source or a binary one is its own result, never a PASS.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any, BinaryIO

from tpudoctor.findings import Scope
from tpudoctor.logs import sources


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


def feed_stream(diagnoser: Any, stream: BinaryIO, source: str, *, scope: Scope | None = None) -> SourceRead:
    """Diagnose one byte stream (peeked, never rewound: FIFOs and pipes read once)."""
    handle = sources.buffered(stream)
    sniffed = sources.sniff(handle)
    if sniffed.state == "empty":
        return SourceRead(source, 0, "empty", "is empty: there is nothing to diagnose")
    if sniffed.state != "text":
        return SourceRead(source, 0, sniffed.state, sniffed.reason)
    before = diagnoser.lines_scanned
    diagnoser.feed_blocks(sources.blocks_then_lines(handle), source, scope=scope)
    return SourceRead(source, diagnoser.lines_scanned - before, "text")


def feed_path(diagnoser: Any, path: str, *, scope: Scope | None = None) -> list[SourceRead]:
    """Diagnose what ``path`` names: ``-`` (stdin), a file, a FIFO or device, or every file of a folder."""
    if path == "-":
        raw = getattr(sys.stdin, "buffer", None)
        if raw is None:  # a text stream put in place of stdin (an embedding program, a test)
            before = diagnoser.lines_scanned
            diagnoser.feed_lines(sources.bounded_lines(sys.stdin), "<stdin>", scope=scope)
            return [SourceRead("<stdin>", diagnoser.lines_scanned - before, "text")]
        return [feed_stream(diagnoser, raw, "<stdin>", scope=scope)]
    if os.path.isdir(path):
        files = sources.expand(path)
        if not files:
            return [SourceRead(path, 0, "empty", "is a folder without log files")]
        return [read for p in files for read in feed_path(diagnoser, p, scope=scope)]
    try:
        with open(path, "rb") as handle:
            return [feed_stream(diagnoser, handle, path, scope=scope)]
    except OSError as exc:
        return [SourceRead(path, 0, "unreadable", f"cannot be read: {exc.strerror or exc}")]
