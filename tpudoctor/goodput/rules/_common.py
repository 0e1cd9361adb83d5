"""Shared pieces of the built-in goodput rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.findings import Finding, FindingKind, Severity, Status


def skipped(rule: Any, why: str) -> Finding:
    """The log cannot tell: SKIP, saying why (never a PASS on no evidence)."""
    return Finding(id=rule.id, step=None, title=rule.title, status=Status.SKIP, message=why, severity=Severity.INFO,
                   skip_reason=why, kind=FindingKind.GOODPUT)


def badput(goodput: Mapping[str, Any], bucket: str) -> dict[str, Any]:
    return dict((goodput.get("badput") or {}).get(bucket) or {})


def level(percent: float, warn: float, fail: float) -> Severity | None:
    if percent >= fail:
        return Severity.HIGH
    if percent >= warn:
        return Severity.MEDIUM
    return None


def example_goodput(**buckets: float | None) -> dict[str, Any]:
    """A small ``goodput`` section for rule examples: bucket -> percent of a 10 000 s wall time."""
    extra = {k: v for k, v in buckets.items() if not k.isupper()}
    badput = {k: {"seconds": None if v is None else v * 100.0, "percent": v} for k, v in buckets.items() if k.isupper()}
    return {"wall_s": 10_000.0, "ettr": 0.8, "badput": badput, "restarts": 0, "saves": [],
            "compilations": {"cache_hits": 0, "cache_writes": 0}, "nulls": {}, **extra}
