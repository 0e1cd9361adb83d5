"""``ProfileReport``: what ``tpudoctor.profile.analyze`` returns and every consumer reads.

The CLI, ``compare`` and every renderer take this object; ``to_dict`` builds its JSON document, from the
parts in ``tpudoctor.profile.document`` (which reads no report: one direction).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tpudoctor import __version__
from tpudoctor.findings import Confidence, Finding, Scope, Status
from tpudoctor.profile.document import (
    DOCUMENT_KIND,
    SCHEMA_VERSION,
    confidence_document,
    cross_host_document,
    evidence_minimum,
    straggler_document,
)
from tpudoctor.profile.host_result import HostResult, kpis
from tpudoctor.profile.summary import CaptureSummary


@dataclasses.dataclass
class ProfileReport:
    """A capture's analysis, all hosts combined.

    ``hosts``: host name -> ``HostResult`` (the map's output). ``results``: host -> every rule's
    result on that host (PASS included). ``verdicts``: host -> (verdict, reason). ``rules``: rule id
    -> rule class that ran. ``analyses``: extra named sections added after the combine (plain
    JSON-ready data), rendered into the document's ``analyses``."""

    source: str
    run: str | None
    hosts: dict[str, HostResult]
    results: dict[str, list[Finding]]
    verdicts: dict[str, tuple[str, str]]
    rules: dict[str, type] = dataclasses.field(default_factory=dict)
    runs_available: list[str] = dataclasses.field(default_factory=list)
    time_origin_ns: int = 0
    cross_host: Any = None  # ``analysis.cross_host.CrossHostAnalysis`` of a multi-host capture
    failed_hosts: dict[str, str] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    analyses: dict[str, Any] = dataclasses.field(default_factory=dict)
    duration_s: float = 0.0  # time to load and analyse
    roofline: dict[str, Any] | None = None
    """All hosts' rooflines combined (``Roofline.to_dict``), None without TPU ops or known roofs."""
    op_table: dict[str, Any] | None = None
    """All hosts' per-op table: ``ops`` (top ``MAX_OPS_IN_REPORT`` by time), ``ops_total``, ``max_ops``."""
    verdict_confidences: dict[str, Confidence] = dataclasses.field(default_factory=dict)
    """host -> how sure its verdict is, and why (``tpudoctor.profile.confidence``)."""

    @property
    def straggler(self) -> str | None:
        """The host that arrives last at the collectives beyond noise; None otherwise or for one host."""
        return self.cross_host.straggler.host if self.cross_host is not None else None

    @property
    def straggler_slowdown_percent(self) -> float | None:
        return self.cross_host.straggler.slowdown_percent if self.straggler is not None else None

    @property
    def primary_host(self) -> str:
        """The host the headline speaks for: the straggler when there is one, else the one host the
        straggler what-if prices (a slowdown that began mid-run: over the whole capture it may not arrive
        last beyond noise), else the first host."""
        if self.straggler in self.hosts:
            return self.straggler
        priced = ((self.analyses or {}).get("straggler_whatif") or {}).get("priced_hosts") or []
        return priced[0] if len(priced) == 1 and priced[0] in self.hosts else next(iter(self.hosts))

    @property
    def primary(self) -> HostResult:
        return self.hosts[self.primary_host]

    @property
    def verdict(self) -> str:
        return self.verdicts[self.primary_host][0]

    @property
    def verdict_reason(self) -> str:
        return self.verdicts[self.primary_host][1]

    @property
    def verdict_confidence(self) -> Confidence | None:
        return self.verdict_confidences.get(self.primary_host)

    @property
    def findings(self) -> list[Finding]:
        """The primary host's findings that fired, the ones explaining the verdict first; each one's
        scope lists every host where that rule fired."""
        from tpudoctor.profile.verdict import order_findings

        where: dict[str, Scope] = {}
        for host_results in self.results.values():
            for r in host_results:
                if r.status is not Status.PASS:
                    where[r.id] = where.get(r.id, Scope()).union(r.scope)
        mine = [dataclasses.replace(r, scope=where[r.id]) for r in self.results[self.primary_host]
                if r.status is not Status.PASS]
        return order_findings(mine, self.verdict, self.rules)

    def fired_ids(self, host: str) -> list[str]:
        return [r.id for r in self.results.get(host, []) if r.status is not Status.PASS]

    @property
    def summary(self) -> CaptureSummary:
        """What the capture holds, host by host (the text report's plane tables)."""
        summaries = [h.summary for h in self.hosts.values() if h.summary is not None]
        return CaptureSummary(
            source=self.source, run=self.run, runs_available=list(self.runs_available),
            time_origin_ns=self.time_origin_ns, n_hosts=len(summaries), n_events=sum(s.n_events for s in summaries),
            device_kinds=sorted({s.device_kind for s in summaries}), hosts=summaries,
            failed_hosts=dict(self.failed_hosts), notes=list(self.notes))

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (schema ``profile_report`` and ``profile_diagnosis``, version 2.x)."""
        p = self.primary
        b, c, ho, dev = p.breakdown, p.compile, p.host_ops, p.device
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": DOCUMENT_KIND,
            "tool": {"name": "tpudoctor", "version": __version__},
            "duration_s": round(self.duration_s, 3),
            "summary": self.summary.to_dict(),
            "analyses": dict(self.analyses),
            "source": self.source,
            "run": self.run,
            "verdict": self.verdict,
            "verdict_reason": self.verdict_reason,
            "verdict_confidence": confidence_document(self.verdict_confidence),
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
            "findings": [f.to_dict() for f in self.findings],
            "rules": [{"id": rule_id, "source": getattr(rule, "source", "builtin"), "needs": list(getattr(rule, "needs", ()))}
                      for rule_id, rule in self.rules.items()],
            "evidence_minimum": evidence_minimum(),
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
            "roofline": self.roofline,
            "op_table": self.op_table,
            "hosts": [{"host": name, "verdict": self.verdicts[name][0], "verdict_reason": self.verdicts[name][1],
                       "verdict_confidence": confidence_document(self.verdict_confidences.get(name)),
                       "kpis": kpis(h), "findings": self.fired_ids(name)} for name, h in self.hosts.items()],
            "straggler": straggler_document(self.cross_host, self.straggler, self.straggler_slowdown_percent),
            "cross_host": cross_host_document(self.cross_host),
            "failed_hosts": [{"host": k, "error": v} for k, v in self.failed_hosts.items()],
        }
