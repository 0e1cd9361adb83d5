"""The byte sizes logs print, read by the one size reader, ``tpudoctor.units`` (this path stays for the log
readers that import it)."""

from tpudoctor.units import (
    MAX_DIGITS,
    MAX_SIZE_BYTES,
    SIZE_PATTERN,
    UNITS,
    Size,
    UnreadableSize,
    parse_size,
)

__all__ = ["MAX_DIGITS", "MAX_SIZE_BYTES", "SIZE_PATTERN", "UNITS", "Size", "UnreadableSize", "parse_size"]
