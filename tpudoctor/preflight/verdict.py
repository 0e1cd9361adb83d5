"""The preflight's one verdict, read from its document: what its exit status is judged on and what its views show
(a module of its own so that views import no analysis)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.findings import Finding, Status
from tpudoctor.units import format_gib


def preflight_verdict(doc: Mapping[str, Any]) -> Finding:
    """The preflight's one verdict from its document: PASS fits, FAIL does not, SKIP nothing compiled (libtpu
    missing), ERROR the program does not compile."""
    limit = format_gib(doc["limit_bytes"])
    if doc["skipped"]:
        status, message = Status.SKIP, doc["skipped"]
    elif doc["fits"]:
        status, message = Status.PASS, (f"fits: {format_gib(doc['total_bytes'])} of {limit}, headroom "
                                        f"{format_gib(doc['headroom_bytes'])} (compiled by libtpu; memory_analysis)")
    elif doc["memory_space"] not in ("", "hbm"):
        status, message = Status.FAIL, (f"does not fit in {doc['memory_space'].upper()} (the program's "
                                        f"{format_gib(doc['total_bytes'])} of HBM would fit)")
    elif doc["total_bytes"] is not None:
        status, message = Status.FAIL, (f"does not fit: needs {format_gib(doc['total_bytes'])} of {limit} "
                                        f"({format_gib(-(doc['headroom_bytes'] or 0))} over)")
    else:
        status, message = Status.ERROR, f"does not compile: {doc['error'][:500]}"
    return Finding("memory-preflight", None, "fits in memory", status, message)
