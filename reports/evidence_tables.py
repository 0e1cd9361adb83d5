"""List-of-records evidence (an OOM report's largest allocations, say) as rows of formatted cells,
for the renderers to draw as a table; byte counts in GiB/MiB."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_ROWS = 20
MAX_CELL_CHARS = 120


def human_bytes(n: int) -> str:
    if abs(n) >= 1024 ** 5 * 1024:  # beyond any memory (and, far enough, beyond a float): the count itself
        return f"{n} B"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    return f"{n} B"  # unreachable


def _cell(key: str, value: Any) -> str:
    if key.endswith("_bytes") and isinstance(value, int) and not isinstance(value, bool):
        text = human_bytes(value)
    elif isinstance(value, float):
        text = f"{value:g}"
    else:
        text = str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 3] + "..."


def tables(evidence: Mapping[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(evidence key, column names, rows) for every evidence value that is a list of records."""
    found = []
    for key, value in evidence.items():
        if not (isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value)):
            continue
        columns: list[str] = []
        for record in value:
            columns += [c for c in record if c not in columns]
        rows = [[_cell(c, record[c]) if c in record else "" for c in columns] for record in value[:MAX_ROWS]]
        found.append((key, columns, rows))
    return found
