"""What the per-host map returns: one host's analysis as small, picklable, plain data.

``HostResult`` holds figures and short tables (lists of records, units in the keys), never an
events DataFrame, so that it crosses a process (or a Dask worker) boundary for a few kilobytes and
the parent's memory stays near one host's. Rules read it; the combine step merges many of them.
Every field has a default so that a rule's examples can build one with only what the rule reads.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tpudoctor.profile.summary import HostSummary

BREAKDOWN_PARTS = ("compute", "collective", "input", "idle", "compile", "host_callback", "host_offload", "outfeed",
                   "host_transfer", "other")
"""The parts of the step-time breakdown, in % of step time; they add up to 100. ``collective``
(waiting for other hosts plus transfer, ``analysis.collectives``) is carved out of compute."""


@dataclasses.dataclass
class StepFigures:
    """How the steps were found (``method``: device-steps-line, host-step-annotations,
    pseudo-steps-xla-modules, pseudo-steps-host-program-runs or none) and the step-time statistics
    (``stats``: count, mean_ms, median_ms, p90_ms, min_ms, max_ms, std_ms, cv_percent)."""

    method: str = "none"
    count: int = 0
    program: str | None = None
    reason: str = ""
    stats: dict[str, float] = dataclasses.field(default_factory=dict)
    micro_benchmark: bool = False
    """No step markers, and the program runs are no training loop (``reason`` says why): no steps."""
    loop: dict[str, Any] = dataclasses.field(default_factory=dict)
    """What pseudo-steps were judged by (``analysis.steps.check_loop``'s figures); empty with markers."""


@dataclasses.dataclass
class BreakdownFigures:
    """Where step time goes. ``model``: tpu-step-breakdown, host-loop-timeline or none;
    ``classification``: xprof's highly/moderately/not input-bound, or unknown; ``percent``: each of
    ``BREAKDOWN_PARTS``; ``per_step``: one record per step (``step_ms`` and ``<part>_ms``)."""

    model: str = "none"
    classification: str = "unknown"
    percent: dict[str, float] = dataclasses.field(default_factory=dict)
    per_step: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    input_stages: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    idle_gaps: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    device_timeline_span_ms: float | None = None

    def part(self, name: str) -> float:
        return float(self.percent.get(name) or 0.0)

    @property
    def step_total_ms(self) -> float:
        return float(sum(s.get("step_ms") or 0.0 for s in self.per_step))


@dataclasses.dataclass
class CompileFigures:
    """Compilations inside the capture window; ``functions``: function, framework, compile_count,
    compile_ms, share_of_capture_percent, program_variants."""

    compile_count: int = 0
    compile_ms: float = 0.0
    share_of_capture_percent: float = 0.0
    program_cache_misses: int = 0
    programs_in_metadata: int = 0
    tf_tracing_count_max: int | None = None
    functions: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def repeated(self) -> list[dict[str, Any]]:
        """Functions compiled at least twice in the window."""
        return [f for f in self.functions if (f.get("compile_count") or 0) >= 2]


@dataclasses.dataclass
class HostOpsFigures:
    """Host-side work that slows the device; ``table``: kind, name, where, count, total_ms,
    share_percent, share_of."""

    device_op_ms: float = 0.0
    host_offload_device_ms: float = 0.0
    host_offload_share_of_device_percent: float = 0.0
    outside_compilation_share_of_device_percent: float = 0.0
    callback_ms: float = 0.0
    host_transfer_ms: float = 0.0
    eager_ms: float = 0.0
    table: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def rows(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.table if r.get("kind") == kind]


@dataclasses.dataclass
class DeviceFigures:
    """Device duty cycle and top ops; ``top_ops``: one row per (program, op) as xprof's hlo_stats:
    program, program_id, name, kind (hlo-op, runtime-copy, other), category, count, self_ms,
    self_percent, flops_per_s; ``per_core``: core, busy_ms, window_ms, duty_cycle_percent;
    ``programs``: program, program_id, runs, devices, device_ms, mean_ms, share_percent (most device
    time first). ``hlo_op_ms``: all HLO ops' self time (xprof's hlo_stats total); ``runtime_copy_ms``:
    the runtime's own copy/memset kernels; ``other_op_ms``: device work tied to no HLO op."""

    duty_cycle_percent: float = 0.0
    idle_percent: float = 0.0
    mxu_utilization_percent: float | None = None
    hbm_utilization_percent: float | None = None
    flops_utilization_percent: float | None = None
    top_ops: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    categories: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    per_core: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    programs: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    hlo_op_ms: float = 0.0
    runtime_copy_ms: float = 0.0
    other_op_ms: float = 0.0


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What one host's capture holds to judge it by (``tpudoctor.profile.analysis.evidence`` names
    the minimum)."""

    steps: int
    step_span_ms: float
    """First step start to last step end."""
    window_ms: float
    """The captured window: first to last timed event."""
    device_time_ms: float
    """Device op busy time, all cores together."""
    has_step_markers: bool

    @property
    def step_coverage_percent(self) -> float:
        return 100.0 * self.step_span_ms / self.window_ms if self.window_ms > 0 else 0.0


@dataclasses.dataclass
class HostResult:
    """One host's analysis: the output of ``tpudoctor.profile.analyze_host``.

    ``time_origin_ns``: the host's own time origin (its ``*_ps`` times count from it); the combine
    step puts all hosts on the earliest origin. ``tables``: small per-host tables that analyses
    added for the combine step (cross-host analyses put their per-step arrivals here), by name.
    """

    host: str
    framework: str = "unknown"
    device_kind: str = "cpu"
    window_ms: float = 0.0
    time_origin_ns: int = 0
    steps: StepFigures = dataclasses.field(default_factory=StepFigures)
    breakdown: BreakdownFigures = dataclasses.field(default_factory=BreakdownFigures)
    compile: CompileFigures = dataclasses.field(default_factory=CompileFigures)
    host_ops: HostOpsFigures = dataclasses.field(default_factory=HostOpsFigures)
    device: DeviceFigures = dataclasses.field(default_factory=DeviceFigures)
    summary: HostSummary | None = None
    plane_names: list[str] = dataclasses.field(default_factory=list)
    has_device_planes: bool = False
    errors: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    tables: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    evidence: Evidence | None = None
    """None where not measured (a hand-built result): the evidence guard then does not apply."""
    versions: dict[str, str] = dataclasses.field(default_factory=dict)
    """Framework and libtpu versions the capture states (``{"framework": ..., "libtpu": ...}``)."""
    roofline: dict[str, Any] | None = None
    """The host's roofline as plain data (``Roofline.to_dict``: peaks, program, ops), None without
    TPU ops or known roofs."""


def kpis(h: HostResult) -> dict[str, float | int | None]:
    """The figures ``tpudoctor compare`` diffs; all numbers, units in the names."""
    return {
        "step_time_mean_ms": h.steps.stats.get("mean_ms"),
        "step_time_median_ms": h.steps.stats.get("median_ms"),
        "step_count": h.steps.count,
        "input_percent": h.breakdown.part("input"),
        "idle_percent": h.breakdown.part("idle"),
        "compute_percent": h.breakdown.part("compute"),
        "host_offload_percent": h.breakdown.part("host_offload"),
        "compile_count": h.compile.compile_count,
        "compile_ms": h.compile.compile_ms,
        "duty_cycle_percent": h.device.duty_cycle_percent,
        "host_callback_ms": h.host_ops.callback_ms,
        "host_offload_share_of_device_percent": h.host_ops.host_offload_share_of_device_percent,
        "capture_window_ms": h.window_ms,
        "mfu_percent": (h.roofline or {}).get("program", {}).get("mfu_percent"),
    }
