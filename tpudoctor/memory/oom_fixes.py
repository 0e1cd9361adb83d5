"""The fixes an out-of-memory listing's own buffers support, ranked by what they would save: estimates from text,
never a measurement (a capture's buffer plan, or the preflight's recompile, tells that).

Only what the listing states is used: the compiler's ``Extra memory due to padding`` of each listed allocation is
what making the small dimension major can give back at most (``tiling-padding``). Where the listing supports no fix,
there is none: ``rank_text_fixes`` returns an empty list and the fixes stay ``unknown``."""

from __future__ import annotations

import dataclasses

from tpudoctor.memory.rules.tiling_padding import TilingPadding

MIN_PADDING_SHARE = 0.05
"""Padding below this share of what ran out (the header's used bytes, else the listed allocations' bytes) is no
fix worth naming."""


@dataclasses.dataclass(frozen=True)
class TextFix:
    id: str
    fix: str
    saves_bytes_at_most: int
    basis: str
    enough: bool | None
    """Whether the saving covers the excess the header states (None: it states none)."""


def rank_text_fixes(report) -> list[TextFix]:
    """``report``: a ``tpudoctor.logs.oom_report.OomReport``."""
    padded = [a for a in report.allocations if a.padding_bytes]
    if not padded:
        return []
    padding = sum(a.padding_bytes for a in padded)
    header = report.header
    scale = header.used_bytes if header is not None and header.used_bytes else sum(
        a.size_bytes or 0 for a in report.allocations)
    if not scale or padding < MIN_PADDING_SHARE * scale:
        return []
    excess = header.exceeded_bytes if header is not None else None
    largest = max(padded, key=lambda a: a.padding_bytes)
    basis = (f"estimate from text: the compiler's 'Extra memory due to padding' of {len(padded)} listed "
             f"allocation(s), the largest {largest.shape}" + (f" ({largest.padding_expansion:g}x expansion)"
                                                               if largest.padding_expansion else ""))
    return [TextFix(TilingPadding.id, TilingPadding.fix, padding, basis,
                    None if excess is None else padding >= excess)]
