"""Analyses that answer "why is my TPU job slow", over a loaded capture.

    from tpudoctor.profile import load
    from tpudoctor.profile.analysis import analyze
    report = analyze(load("logdir/"))       # ProfileAnalysis
    report.verdict, report.hosts["h0"].input.per_step  # DataFrames with units in column names
    report.to_dict()                        # the JSON report (schema ``profile_report``)

One module per analysis: ``steps``, ``input_bound``, ``host_ops``, ``recompilation``,
``device_ops``, ``collectives`` (per host) and ``cross_host`` (combined), ``hosts``, ``verdict``. All return data; ``tpudoctor.reports.profile_*`` render it.
"""

from __future__ import annotations

import dataclasses

from tpudoctor.profile.analysis.collectives import HostCollectives, host_collectives
from tpudoctor.profile.analysis.communication import apply_cross_host
from tpudoctor.profile.analysis.device_ops import DeviceOps, analyze_device_ops
from tpudoctor.profile.analysis.events import capture_window_ps, device_kind, name_matches
from tpudoctor.profile.analysis.host_ops import HostOps, analyze_host_ops
from tpudoctor.profile.analysis.hosts import HostsSummary, summarize_hosts
from tpudoctor.profile.analysis.input_bound import InputAnalysis, analyze_input
from tpudoctor.profile.analysis.recompilation import Recompilation, analyze_recompilation
from tpudoctor.profile.analysis.steps import StepSet, find_steps, step_time_stats
from tpudoctor.profile.analysis.verdict import (
    VERDICTS,
    Finding,
    build_findings,
    decide,
    order_findings,
)

REPORT_SCHEMA_VERSION = "1.0"

__all__ = ["analyze", "analyze_host", "HostAnalysis", "ProfileAnalysis", "VERDICTS", "REPORT_SCHEMA_VERSION"]


@dataclasses.dataclass
class HostAnalysis:
    host: str
    framework: str
    window_ms: float
    steps: StepSet
    step_stats: dict
    input: InputAnalysis
    recompilation: Recompilation
    host_ops: HostOps
    device: DeviceOps
    device_kind: str = "cpu"
    findings: list[Finding] = dataclasses.field(default_factory=list)
    verdict: str = "unknown"
    verdict_reason: str = ""
    collectives: HostCollectives | None = None  # the per-host map result of the cross-host analysis


def analyze_host(host, name: str | None = None) -> HostAnalysis:
    window = capture_window_ps(host)
    kind = device_kind(host)
    steps = find_steps(host)
    recompilation = analyze_recompilation(host, window)
    host_ops = analyze_host_ops(host, window)
    inp = analyze_input(host, steps, device=kind, compile_intervals=recompilation.intervals,
                        callback_intervals=host_ops.callback_intervals)
    result = _make(host, name, kind, window, steps, recompilation, host_ops, inp)
    result.collectives = host_collectives(host, steps, result.host)
    result.verdict, result.verdict_reason = decide(result)
    result.findings = order_findings(build_findings(result), result.verdict)
    return result


def _make(host, name, kind, window, steps, recompilation, host_ops, inp) -> HostAnalysis:
    return HostAnalysis(
        host=name or getattr(host, "hostname", "host"), framework=_framework(host),
        window_ms=(window[1] - window[0]) / 1e9, steps=steps, step_stats=step_time_stats(steps), input=inp,
        recompilation=recompilation, host_ops=host_ops, device=analyze_device_ops(host), device_kind=kind,
    )


def _framework(host) -> str:
    ev = host.events
    if name_matches(ev, r"^(?:PjitFunction\(|backend_compile|ExecuteReplicated)").any():
        return "jax"
    if name_matches(ev, r"^(?:EagerExecute|FunctionRun|ExecutorState::Process|IteratorGetNextOp::DoCompute)$").any():
        return "tensorflow"
    return "unknown"


@dataclasses.dataclass
class ProfileAnalysis:
    source: str
    run: str | None
    hosts: dict[str, HostAnalysis]
    failed_hosts: dict[str, str]
    summary: HostsSummary

    @property
    def primary(self) -> HostAnalysis:
        """The host the headline speaks for: the straggler when there is one, else the first host."""
        if self.summary.straggler:
            return self.hosts[self.summary.straggler]
        return next(iter(self.hosts.values()))

    @property
    def verdict(self) -> str:
        return self.primary.verdict

    def to_dict(self) -> dict:
        from tpudoctor.profile.analysis.document import report_document

        return report_document(self)


def analyze(capture) -> ProfileAnalysis:
    """Analyze every loaded host of a ``ProfileCapture`` (from ``tpudoctor.profile.load``)."""
    hosts = {name: analyze_host(h, name) for name, h in sorted(capture.hosts.items())}
    summary = summarize_hosts(hosts)
    apply_cross_host(hosts, summary.cross_host)  # combine step: straggler and wait/transfer findings
    return ProfileAnalysis(
        source=str(getattr(capture, "source", "")), run=getattr(capture, "run", None), hosts=hosts,
        failed_hosts=dict(getattr(capture, "failed_hosts", {}) or {}), summary=summary,
    )
