"""The parts of a ``ProfileReport``'s JSON document: its schema version, the sections built from analysis
objects, and the upgrade of 1.x documents. ``ProfileReport.to_dict`` assembles the document from these; this
module reads no report, so the document is built in one direction (report -> document parts).

Schemas ``tpudoctor/schema/profile_report`` (capture summary) and ``profile_diagnosis`` (verdict,
findings, breakdown...) describe it; each finding has the shape of a check result (the check
report schema's ``result``). ``upgrade_profile_report_v1`` reads documents saved by 1.x.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tpudoctor.findings import FindingKind, Scope, Status

if TYPE_CHECKING:
    from tpudoctor.findings import Confidence

DOCUMENT_KIND = "profile"
SCHEMA_VERSION = "2.3"
"""2.0: findings are ``tpudoctor.findings.Finding`` documents (id, kind, status, severity, scope...),
the breakdown has a ``host_offload`` part; 1.x documents are upgraded on reading.
2.1 (additive): ``roofline`` (program and per-op roofline and MFU, TPU only), ``op_table`` (the
per-op table compare's op diff reads), ``versions``, the ``mfu_percent`` KPI.
2.2 (additive): ``verdict_confidence`` and each finding's ``confidence`` (level high/medium/low/
unknown, reasons, basis); ``steps.micro_benchmark`` and ``steps.loop``; ``device_ops.programs`` (device
time per program), ``hlo_op_ms``/``runtime_copy_ms``/``other_op_ms``; top ops and op tables carry
``program`` (one row per program and op) and ``kind``; ``breakdown.per_step[].collective_ms``.
2.3 (additive): ``analyses.straggler_whatif.persistent_straggler_host`` (the priced host the report names)."""


def confidence_document(confidence: Confidence | None) -> dict[str, Any]:
    """A verdict's confidence; ``unknown`` where none was judged (a report built by hand)."""
    if confidence is None:
        return {"level": "unknown", "reasons": ["not judged"], "basis": {}}
    return confidence.to_dict()


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else round(value, 4)
    return value


def straggler_document(cross: Any, straggler: str | None, slowdown_percent: float | None) -> dict[str, Any] | None:
    """The straggler with its per-step delay (cross-host analysis); None when no host is named."""
    if not straggler:
        return None
    s = cross.straggler if cross is not None else None
    details = {} if s is None else {
        "delay_ms_median": s.delay_ms_median, "cost_ms_per_step": s.cost_ms_per_step,
        "others_wait_ms_per_step": s.others_wait_ms_per_step, "last_arrival_steps": s.last_arrival_steps,
        "steps_compared": s.steps_compared, "decided_by": s.decided_by}
    return _plain({"host": straggler, "slowdown_percent": slowdown_percent, **details})


def cross_host_document(cross: Any) -> dict[str, Any] | None:
    """A multi-host capture's cross-host analysis (``analysis.cross_host.CrossHostAnalysis``); None for one host."""
    if cross is None:
        return None
    s = cross.straggler
    return _plain({"aligned_by": cross.aligned_by, "per_host": cross.per_host.to_dict(orient="records"),
                   "straggler_test": {"candidate": s.candidate, "steps_compared": s.steps_compared,
                                      "last_arrival_steps": s.last_arrival_steps,
                                      "last_arrival_p_value": s.last_arrival_p_value,
                                      "lateness_p_value": s.lateness_p_value, "delay_ms_median": s.delay_ms_median,
                                      "decided_by": s.decided_by},
                   "notes": list(cross.notes)})


def evidence_minimum() -> dict[str, Any]:
    """The named minimum evidence a verdict needs (below it the verdict is unknown)."""
    import dataclasses

    from tpudoctor.profile.analysis.evidence import MinimumEvidence

    return {**dataclasses.asdict(MinimumEvidence()),
            "applies": "steps for every verdict; step coverage for all but compile-bound; device time for device-bound"}


_V1_SEVERITY = {"high": "high", "medium": "medium", "low": "low", "info": "info"}


def upgrade_profile_report_v1(document: dict[str, Any]) -> dict[str, Any]:
    """A 1.x profile report in the 2.0 shape: each finding (id, severity, title, summary, evidence,
    fixes) becomes a Finding document. 1.x reports named no scope: it stays empty (the whole job)."""
    findings = []
    for old in document.get("findings") or []:
        if not isinstance(old, dict):
            raise TypeError("a finding is not an object")
        severity = _V1_SEVERITY[old.get("severity", "medium")]
        fixes = [str(x) for x in old.get("fixes") or []]
        findings.append({
            "id": old["id"], "kind": FindingKind.PROFILE.value, "step": None, "title": old["title"],
            "status": (Status.FAIL if severity == "high" else Status.WARN).value, "severity": severity,
            "message": old.get("summary", ""), "evidence": dict(old.get("evidence") or {}),
            "remediation": {"text": "\n".join(fixes), "commands": [], "docs_url": None} if fixes else None,
            "scope": Scope().to_dict(), "skip_reason": None, "duration_s": 0.0,
        })
    upgraded = {**document, "schema_version": SCHEMA_VERSION, "findings": findings}
    upgraded.setdefault("tool", {"name": "tpudoctor", "version": document.get("tool_version", "")})
    return upgraded


__all__ = ["DOCUMENT_KIND", "SCHEMA_VERSION", "confidence_document", "cross_host_document", "evidence_minimum",
           "straggler_document", "upgrade_profile_report_v1"]
