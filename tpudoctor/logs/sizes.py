"""The one reader of the byte sizes logs print: XLA's and libtpu's human-readable sizes (``15.48G``, ``530.00M``,
``0B``, ``-2.55G``, ``2.5GiB``, ``3.47E``; 1024-based, rounded to the digits shown) as bytes.

Bounded: XLA counts bytes in int64, so no size it prints is beyond 8 EiB (``MAX_SIZE_BYTES``, as rounded). A
figure beyond that (a 400-digit run, a forged or garbled line) is not a size: ``UnreadableSize``, a
``ValueError``, so every reader that skips what it cannot read skips it, instead of an overflow far downstream.
"""

from __future__ import annotations

import dataclasses
import math
import re

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
MAX_SIZE_BYTES = 1 << 63
"""8 EiB: int64's range, which XLA's byte counts live in (``8.00E`` rounds to exactly this)."""
MAX_DIGITS = 24
"""Digits a printed figure may have (XLA prints at most 19 for a byte count, fewer with a unit)."""

SIZE_PATTERN = r"-?[0-9]+(?:\.[0-9]+)?\s*[KMGTPE]?(?:i?B)?"
"""A printed size, for the grammars that find sizes in a line (``Size.parse`` reads what it matches)."""
_SIZE_RE = re.compile(r"^(-?)([0-9]+)(?:\.([0-9]+))?\s*([KMGTPE]?)(?:i?B)?$")


class UnreadableSize(ValueError):
    """Text that is no byte size: not one at all, or a figure beyond ``MAX_SIZE_BYTES``."""


@dataclasses.dataclass(frozen=True)
class Size:
    """A printed size: its bytes and how far the printed digits can be from the real figure."""

    bytes: int
    slack: int
    text: str

    @classmethod
    def parse(cls, text: str) -> Size:
        """``UnreadableSize`` for text that is not a size, or whose figure no byte count reaches."""
        stripped = text.strip()
        match = _SIZE_RE.match(stripped)
        if match is None:
            raise UnreadableSize(f"not a byte size: {_quote(stripped)}")
        sign, whole, fraction, unit_name = match.groups()
        if len(whole.lstrip("0")) + len(fraction or "") > MAX_DIGITS:
            raise UnreadableSize(f"{_quote(stripped)} has {len(whole) + len(fraction or ''):,} digits: no byte "
                                 "count is that long")
        unit = UNITS[unit_name]
        decimals = len(fraction or "")
        value = float(f"{sign}{whole}.{fraction or '0'}") * unit
        if not math.isfinite(value) or abs(value) > MAX_SIZE_BYTES:
            raise UnreadableSize(f"{_quote(stripped)} is beyond 8 EiB, more than any byte count XLA prints")
        return cls(int(round(value)), int(math.ceil(0.5 * unit / 10**decimals)) if unit > 1 else 0, stripped)


def parse_size(text: str) -> int:
    """A printed size as bytes (``Size.parse``); ``UnreadableSize`` (a ``ValueError``) where it is none."""
    return Size.parse(text).bytes


def _quote(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else f"{text[:limit]}…")
