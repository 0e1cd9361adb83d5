"""Which lines of a log are worth reading: one pass over raw bytes for any of a reader's literal keywords.

A reader hands its keywords (the substrings without which none of its patterns can match); the pass runs in
RE2's DFA over the undecoded bytes of a block of lines (hundreds of MB/s), so a reader decodes and parses only
the lines that hold one. Python's own ``re`` serves where RE2 cannot be imported (same answers, slower).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

try:
    import re2 as _re2
except ImportError:  # pragma: no cover - google-re2 is a dependency; a broken wheel falls back
    _re2 = None

ENGINE = "re2" if _re2 is not None else "re"


class Literals:
    """Any of ``exact`` (case-sensitive) or ``folded`` (case-insensitive) substrings, over bytes."""

    def __init__(self, exact: Iterable[str], folded: Iterable[str] = ()):
        exact = sorted({k for k in exact if k}, key=len, reverse=True)
        folded = sorted({k.lower() for k in folded if k}, key=len, reverse=True)
        if not exact and not folded:
            raise ValueError("a prefilter needs at least one keyword")
        parts = ["|".join(re.escape(k) for k in exact)] if exact else []
        if folded:
            parts.append("(?i:" + "|".join(re.escape(k) for k in folded) + ")")
        pattern = "|".join(parts).encode("utf-8")
        self.pattern = pattern
        self._regex = _re2.compile(pattern) if _re2 is not None else re.compile(pattern)
        # From the start of a line to its last keyword: one match per line, found in one scan.
        lines = b"[^\n]*(?:" + pattern + b")"
        self._lines = _re2.compile(lines) if _re2 is not None else re.compile(lines)

    def search(self, data: bytes, start: int = 0) -> int:
        """The offset of the first keyword at or after ``start``, or -1."""
        m = self._regex.search(data, start)
        return m.start() if m else -1

    def offsets(self, data: bytes, start: int = 0) -> list[int]:
        """Where a keyword stands in ``data`` from ``start`` on (in order, not overlapping): RE2 finds a literal
        with a rare first byte at memchr's speed, several times faster than ``bytes.find``."""
        return [m.start() for m in self._regex.finditer(data, start)]

    def line_spans(self, data: bytes) -> Iterator[tuple[int, int]]:
        """(start, end) byte offsets of each line of ``data`` that holds a keyword, once each, in order
        (``end`` excludes the newline)."""
        size = len(data)
        for m in self._lines.finditer(data):
            end = data.find(b"\n", m.end())
            yield m.start(), (end if end >= 0 else size)
