"""Units, once: the one reader of printed byte sizes, the one byte formatter and the one duration formatter.

Sizes as logs print them: XLA's and libtpu's human-readable sizes (``15.48G``, ``530.00M``, ``0B``, ``-2.55G``,
``2.5GiB``, ``3.47E``; 1024-based, rounded to the digits shown) as bytes. Bounded: XLA counts bytes in int64, so
no size it prints is beyond 8 EiB (``MAX_SIZE_BYTES``, as rounded). A figure beyond that (a 400-digit run, a
forged or garbled line) is not a size: ``UnreadableSize``, a ``ValueError``, so every reader that skips what it
cannot read skips it, instead of an overflow far downstream.

Shown sizes are 1024-based with two decimals (``5.00 TiB``, ``1.50 KiB``, ``12 B``); shown durations pick their
unit (``250 ms``, ``12.3 s``, ``4.5 min``, ``2.00 h``).
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


BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
_BEYOND_BYTES = 1 << 70
"""1024 EiB: beyond any memory or file (and, far enough, beyond a float), so the count itself is shown."""


def format_bytes(n: int | float) -> str:
    """``n`` bytes as people read them: ``12 B``, ``1.50 KiB``, ``5.00 TiB``, ``-2.55 GiB`` (two decimals,
    1024-based, the largest unit it reaches); a count beyond 1024 EiB as itself (``1267650600228229401496703205376 B``)."""
    if isinstance(n, float) and not math.isfinite(n):
        return f"{n} B"
    if abs(n) >= _BEYOND_BYTES:
        return f"{int(n)} B"
    if abs(n) < 1024:
        return f"{int(n)} B"
    size = float(n)
    for unit in BYTE_UNITS:
        size /= 1024
        if abs(size) < 1024 or unit == BYTE_UNITS[-1]:
            break
    return f"{size:.2f} {unit}"


_SUBSECOND_UNITS = (("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def format_gib(n: int | float | None) -> str:
    """Bytes in GiB always, two decimals (``15.75 GiB``): the preflight's sizes, all read against a chip's HBM in
    one unit; ``?`` for none."""
    return "?" if n is None else f"{n / (1 << 30):.2f} GiB"


def format_duration(seconds: float | None) -> str:
    """A duration as people read it: ``2.00 h`` from two hours, ``4.5 min`` from 120 s, ``12.3 s`` from a
    second, ``250 ms``/``3.2 us``/``40 ns`` (three significant digits) below it; ``unknown`` for none (or a
    figure that is no duration: NaN, infinite)."""
    if seconds is None:
        return "unknown"
    seconds = float(seconds)
    if not math.isfinite(seconds):
        return "unknown"
    size = abs(seconds)
    if size >= 3600:
        return f"{seconds / 3600:.2f} h"
    if size >= 120:
        return f"{seconds / 60:.1f} min"
    if size >= 1 or size == 0:
        return f"{seconds:.1f} s" if size else "0 s"
    larger = "1.0 s"
    for unit, scale in _SUBSECOND_UNITS:
        if size >= scale or unit == "ns":
            shown = f"{seconds / scale:.3g}"
            # 999.6 ms rounds to three digits as 1e+03: one unit up, as the next size would print it
            return f"{'-' if seconds < 0 else ''}{larger}" if abs(float(shown)) >= 1000 else f"{shown} {unit}"
        larger = f"1 {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def format_si(value: float | None, unit: str) -> str:
    """A rate or count with an SI prefix, three significant digits: ``1.23e12`` FLOP/s reads ``1.23 TFLOP/s``;
    ``n/a`` for none (or NaN, infinite)."""
    if value is None or not math.isfinite(value):
        return "n/a"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_ps(value_ps: int | float | None) -> str:
    """A capture's span in picoseconds, to the unit it reaches: three significant digits (``1.49 s``,
    ``27.6 ms``), whole units from 100 (``1,234 ms``); ``-`` for none or zero (a line with no events)."""
    if not value_ps:
        return "-"
    for unit, scale in (("s", 1e12), ("ms", 1e9), ("us", 1e6), ("ns", 1e3)):
        if value_ps >= scale:
            return f"{value_ps / scale:.3g} {unit}" if value_ps / scale < 100 else f"{value_ps / scale:,.0f} {unit}"
    return f"{value_ps} ps"
