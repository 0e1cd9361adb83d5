"""The JSON document of a ``ProfileReport``: built here and nowhere else.

Schemas ``tpudoctor/schema/profile_report`` (capture summary) and ``profile_diagnosis`` (verdict,
findings, breakdown...) describe it; each finding has the shape of a check result (the check
report schema's ``result``). ``upgrade_profile_report_v1`` reads documents saved by 1.x.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tpudoctor import __version__
from tpudoctor.findings import FindingKind, Scope, Status
from tpudoctor.profile.host_result import kpis

if TYPE_CHECKING:
    from tpudoctor.profile.report import ProfileReport

DOCUMENT_KIND = "profile"
SCHEMA_VERSION = "2.2"
"""2.0: findings are ``tpudoctor.findings.Finding`` documents (id, kind, status, severity, scope...),
the breakdown has a ``host_offload`` part; 1.x documents are upgraded on reading.
2.1 (additive): ``roofline`` (program and per-op roofline and MFU, TPU only), ``op_table`` (the
per-op table compare's op diff reads), ``versions``, the ``mfu_percent`` KPI.
2.2 (additive): ``verdict_confidence`` and each finding's ``confidence`` (level high/medium/low/
unknown, reasons, basis); ``steps.micro_benchmark`` and ``steps.loop``; ``device_ops.programs`` (device
time per program), ``hlo_op_ms``/``runtime_copy_ms``/``other_op_ms``; top ops and op tables carry
``program`` (one row per program and op) and ``kind``; ``breakdown.per_step[].collective_ms``."""


def profile_document(report: ProfileReport) -> dict[str, Any]:
    p = report.primary
    b, c, ho, dev = p.breakdown, p.compile, p.host_ops, p.device
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": DOCUMENT_KIND,
        "tool": {"name": "tpudoctor", "version": __version__},
        "duration_s": round(report.duration_s, 3),
        "summary": report.summary.to_dict(),
        "analyses": dict(report.analyses),
        "source": report.source,
        "run": report.run,
        "verdict": report.verdict,
        "verdict_reason": report.verdict_reason,
        "verdict_confidence": _confidence(report.verdict_confidence),
        "primary_host": p.host,
        "device": p.device_kind,
        "framework": p.framework,
        "kpis": kpis(p),
        "steps": {"method": p.steps.method, "program": p.steps.program, "reason": p.steps.reason,
                  "count": p.steps.count, "stats": dict(p.steps.stats),
                  "micro_benchmark": p.steps.micro_benchmark, "loop": dict(p.steps.loop)},
        "breakdown": {"model": b.model, "classification": b.classification, "percent": dict(b.percent),
                      "per_step": b.per_step, "input_stages": b.input_stages, "idle_gaps": b.idle_gaps,
                      "device_timeline_span_ms": b.device_timeline_span_ms},
        "findings": [f.to_dict() for f in report.findings],
        "rules": [{"id": rule_id, "source": getattr(rule, "source", "builtin"), "needs": list(getattr(rule, "needs", ()))}
                  for rule_id, rule in report.rules.items()],
        "evidence_minimum": _evidence_minimum(),
        "recompilation": {"compile_count": c.compile_count, "compile_ms": c.compile_ms,
                          "share_of_capture_percent": c.share_of_capture_percent,
                          "program_cache_misses": c.program_cache_misses,
                          "programs_in_metadata": c.programs_in_metadata,
                          "tf_tracing_count_max": c.tf_tracing_count_max, "functions": c.functions},
        "host_ops": {"device_op_ms": ho.device_op_ms, "host_offload_device_ms": ho.host_offload_device_ms,
                     "host_offload_share_of_device_percent": ho.host_offload_share_of_device_percent,
                     "outside_compilation_share_of_device_percent": ho.outside_compilation_share_of_device_percent,
                     "callback_ms": ho.callback_ms, "host_transfer_ms": ho.host_transfer_ms, "eager_ms": ho.eager_ms,
                     "table": ho.table},
        "device_ops": {"duty_cycle_percent": dev.duty_cycle_percent, "idle_percent": dev.idle_percent,
                       "mxu_utilization_percent": dev.mxu_utilization_percent,
                       "hbm_utilization_percent": dev.hbm_utilization_percent,
                       "flops_utilization_percent": dev.flops_utilization_percent,
                       "top_ops": dev.top_ops, "categories": dev.categories, "per_core": dev.per_core,
                       "programs": dev.programs, "hlo_op_ms": dev.hlo_op_ms, "runtime_copy_ms": dev.runtime_copy_ms,
                       "other_op_ms": dev.other_op_ms},
        "versions": dict(p.versions),
        "roofline": report.roofline,
        "op_table": report.op_table,
        "hosts": [{"host": name, "verdict": report.verdicts[name][0], "verdict_reason": report.verdicts[name][1],
                   "verdict_confidence": _confidence(report.verdict_confidences.get(name)),
                   "kpis": kpis(h), "findings": report.fired_ids(name)} for name, h in report.hosts.items()],
        "straggler": _straggler(report),
        "cross_host": _cross_host(report),
        "failed_hosts": [{"host": k, "error": v} for k, v in report.failed_hosts.items()],
    }


def _confidence(confidence) -> dict[str, Any]:
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


def _straggler(report: ProfileReport) -> dict[str, Any] | None:
    """The straggler with its per-step delay (cross-host analysis); None when no host is named."""
    if not report.straggler:
        return None
    s = report.cross_host.straggler if report.cross_host is not None else None
    details = {} if s is None else {
        "delay_ms_median": s.delay_ms_median, "cost_ms_per_step": s.cost_ms_per_step,
        "others_wait_ms_per_step": s.others_wait_ms_per_step, "last_arrival_steps": s.last_arrival_steps,
        "steps_compared": s.steps_compared, "decided_by": s.decided_by}
    return _plain({"host": report.straggler, "slowdown_percent": report.straggler_slowdown_percent, **details})


def _cross_host(report: ProfileReport) -> dict[str, Any] | None:
    cross = report.cross_host
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


def _evidence_minimum() -> dict[str, Any]:
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


__all__ = ["profile_document", "upgrade_profile_report_v1"]
