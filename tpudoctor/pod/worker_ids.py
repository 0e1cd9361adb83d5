"""Worker lists as users write them: ``0,3-5`` -> ["0", "3", "4", "5"]; and back, ``3, 7`` for messages."""

from __future__ import annotations

from tpudoctor.errors import UsageError

# the one order of names and the one way to list workers live with the finding model, beside Scope, so that a
# view can say "workers 0-15" without importing the pod
from tpudoctor.findings import describe_workers, natural_key

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


__all__ = ["MAX_WORKERS", "describe_workers", "natural_key", "parse_worker_spec"]
