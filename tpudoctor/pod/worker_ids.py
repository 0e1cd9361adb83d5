"""Worker lists as users write them: ``0,3-5`` -> ["0", "3", "4", "5"]; and back, ``3, 7`` for messages."""

from __future__ import annotations

from collections.abc import Iterable

from tpudoctor.errors import UsageError

MAX_WORKERS = 4096


def parse_worker_spec(spec: str) -> list[str]:
    """``0,3-5`` -> ["0", "3", "4", "5"] (sorted, no duplicates); a usage error for anything else."""
    hint = "write worker numbers and ranges, e.g. --workers 0,3-5"
    found: set[int] = set()
    for part in (p.strip() for p in str(spec).split(",")):
        if not part:
            raise UsageError(f"--workers {spec!r}: empty item", hint=hint)
        low, sep, high = part.partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            raise UsageError(f"--workers {spec!r}: {part!r} is not a worker number or range", hint=hint)
        start, stop = int(low), int(high) if sep else int(low)
        if stop < start:
            raise UsageError(f"--workers {spec!r}: range {part!r} runs backwards", hint=hint)
        if stop >= MAX_WORKERS:
            raise UsageError(f"--workers {spec!r}: worker {stop} is beyond any slice ({MAX_WORKERS} workers)")
        found.update(range(start, stop + 1))
    return [str(w) for w in sorted(found)]


def natural_key(worker: str) -> tuple:
    """``2`` before ``10``, ``worker-2`` before ``worker-10`` (the one order of names, in findings)."""
    from tpudoctor.findings import natural_key as key

    return key(worker)


def describe_workers(workers: Iterable[str], *, limit: int = 12) -> str:
    """``3, 7`` or ``0-15`` or ``0-3, 9, 12-20 and 4 more``: ranges folded, long lists cut."""
    ordered = sorted(set(workers), key=natural_key)
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        if ordered[i].isdigit():
            while j + 1 < len(ordered) and ordered[j + 1].isdigit() and int(ordered[j + 1]) == int(ordered[j]) + 1:
                j += 1
        if j - i >= 2:  # a run of three or more reads better as a range; "0, 1" stays a list
            parts.append(f"{ordered[i]}-{ordered[j]}")
            i = j + 1
        else:
            parts.append(ordered[i])
            i += 1
    if len(parts) > limit:
        return ", ".join(parts[:limit]) + f" and {len(parts) - limit} more"
    return ", ".join(parts)
