"""A whole log held as its bytes and the offsets of its lines, read a column at a time: a regex runs over the
buffer once (in C), numpy maps its hits to line numbers, and only the lines asked for are decoded. Inference's
second pass reads a long log this way instead of a Python loop over every line.

>>> buf = LineBuffer.of(b"a 1\\nstep 2 loss 3\\nb\\nstep 4 loss 5\\n")
>>> len(buf), buf[1], buf[-1]
(4, 'step 2 loss 3', 'step 4 loss 5')
>>> [int(i) for i in buf.lines_with(b"step ")]
[1, 3]
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from tpudoctor.logs import prefilter
from tpudoctor.logs.sources import MAX_LINE_CHARS


class LineBuffer(Sequence[str]):
    """The lines of a log (as universal newlines split them, without their ends), decoded one at a time."""

    def __init__(self, data: bytes, starts: np.ndarray, ends: np.ndarray):
        self.data, self.starts, self.ends = data, starts, ends

    @classmethod
    def of(cls, data: bytes) -> LineBuffer | None:
        """The buffer's lines; None where a carriage return or an overlong line needs the line-by-line split."""
        if b"\r" in data:
            return None
        newlines = _newlines(data)
        starts = np.concatenate(([0], newlines + 1))
        ends = np.concatenate((newlines, [len(data)]))
        if len(starts) and starts[-1] == len(data):  # the text ends with its newline: no empty last line
            starts, ends = starts[:-1], ends[:-1]
        if len(starts) and int((ends - starts).max()) > MAX_LINE_CHARS:
            return None
        return cls(data, starts, ends)

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.data[self.starts[i]:self.ends[i]].decode("utf-8", errors="replace")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def line_of(self, offsets: np.ndarray) -> np.ndarray:
        """The line each byte offset stands on."""
        return np.searchsorted(self.starts, offsets, side="right") - 1

    def offset(self, line: int) -> int:
        return int(self.starts[line]) if line < len(self) else len(self.data)

    def lines_with(self, *literals: bytes, from_line: int = 0, frequent: bool = False) -> np.ndarray:
        """The lines (from ``from_line`` on) that hold any of ``literals``, each once, in order: a literal is found
        by a substring search, not tried at every byte (RE2's, fastest between hits; ``frequent``: one on most
        lines of a kind, a step line's, by ``bytes.find``, which costs less a hit)."""
        start = self.offset(from_line)
        found = [np.array(_offsets_of(self.data, literal, start) if frequent else
                          prefilter.Literals([literal.decode()]).offsets(self.data, start),
                          dtype=np.int64) for literal in literals if literal]
        hits = np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
        lines = self.line_of(hits)
        return lines[np.concatenate(([True], lines[1:] != lines[:-1]))] if len(lines) else lines

    def texts(self, lines: np.ndarray) -> list[str]:
        """The given lines decoded at once (as ``self[i]`` each would be: a newline never ends a broken sequence)."""
        if not len(lines):
            return []
        return self.joined(lines).decode("utf-8", errors="replace").split("\n")

    def joined(self, lines: np.ndarray) -> bytes:
        """The given lines' bytes, one per row (newline-separated)."""
        return b"\n".join(self.data[s:e] for s, e in zip(self.starts[lines].tolist(), self.ends[lines].tolist(),
                                                          strict=True))


def first_match_per_row(pattern: re.Pattern[bytes], rows: bytes, *groups: int,
                        digits_alike: bool = False) -> tuple[np.ndarray, list[list[bytes]]]:
    """The rows (lines joined by newlines) that ``pattern`` matches, and each of ``groups`` (a column, a row per
    match) of each one's first match: one regex pass over all rows, not a search per line (``pattern`` must not
    match a newline). ``digits_alike``: the pattern tells no digit from another (no digit in its literals), so rows
    that differ only in their digits match alike, and the regex runs once per such shape (a step line's shape
    repeats line after line)."""
    if digits_alike:
        return _first_match_per_shape(pattern, rows, groups)
    hits = [(m.start(), m.group(*groups)) for m in pattern.finditer(rows)]
    if not hits:
        return np.zeros(0, dtype=np.int64), [[] for _ in groups]
    newlines = np.flatnonzero(np.frombuffer(rows, dtype=np.uint8) == 10)
    row = np.searchsorted(newlines, np.fromiter((h[0] for h in hits), dtype=np.int64, count=len(hits)))
    first = np.flatnonzero(np.concatenate(([True], row[1:] != row[:-1]))).tolist()  # a row's later matches dropped
    if len(groups) == 1:
        return row[first], [[hits[k][1] for k in first]]
    return row[first], [[hits[k][1][g] for k in first] for g in range(len(groups))]


def _first_match_per_shape(pattern: re.Pattern[bytes], rows: bytes,
                           groups: tuple[int, ...]) -> tuple[np.ndarray, list[list[bytes]]]:
    a = np.frombuffer(rows, dtype=np.uint8)
    shapes = np.where((a >= 48) & (a <= 57), np.uint8(48), a).tobytes().split(b"\n")  # each digit as 0
    index: dict[bytes, int] = {}
    shape_of = np.array([index.setdefault(shape, len(index)) for shape in shapes], dtype=np.int64)
    spans = np.full((len(index), len(groups), 2), -1, dtype=np.int64)
    for shape, k in index.items():
        if (m := pattern.search(shape)) is not None:
            spans[k] = [m.span(g) for g in groups]
    matched = np.flatnonzero(spans[shape_of, 0, 0] >= 0)
    starts = np.concatenate(([0], np.flatnonzero(a == 10) + 1))[matched]
    found = spans[shape_of[matched]]
    return matched, [[rows[s:e] for s, e in zip((starts + found[:, g, 0]).tolist(), (starts + found[:, g, 1]).tolist(),
                                                 strict=True)] for g in range(len(groups))]


def _offsets_of(data: bytes, literal: bytes, start: int) -> list[int]:
    """Where ``literal`` stands in ``data`` from ``start`` on (overlaps too): ``bytes.find``'s two-way search
    runs several times faster than ``re`` does over a literal with a metacharacter escaped in it."""
    out: list[int] = []
    find, add = data.find, out.append
    at = find(literal, start)
    while at >= 0:
        add(at)
        at = find(literal, at + 1)
    return out


NEWLINE_CHUNK = 1 << 22
"""Newlines are found 4 MiB at a time: one small mask reused, not a fresh one the size of the log to fault in."""


def _newlines(data: bytes) -> np.ndarray:
    """The offsets of ``data``'s newlines."""
    a = np.frombuffer(data, dtype=np.uint8)
    mask = np.empty(min(len(a), NEWLINE_CHUNK), dtype=bool)
    found = [np.flatnonzero(np.equal(a[s:s + NEWLINE_CHUNK], 10, out=mask[:len(a[s:s + NEWLINE_CHUNK])])) + s
             for s in range(0, len(a), NEWLINE_CHUNK)]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
