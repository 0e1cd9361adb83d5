"""``tpudoctor profile analyze trace.parquet``: an op trace of a pipeline-parallel job read
(``op_trace``), its what-ifs simulated (``analysis.pipeline_whatif``), as one report document."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

KIND = "pipeline_whatif"


@dataclasses.dataclass
class OpTraceReport:
    """The report of one op trace; ``to_dict`` is its document (``kind`` ``pipeline_whatif``)."""

    source: str
    meta_source: str | None
    whatif: Any  # analysis.pipeline_whatif.PipelineWhatIf
    duration_s: float = 0.0
    kind: str = KIND

    @property
    def findings(self) -> list:
        """What the exit status is judged on: a FAIL per priced worker (a persistent excess worth
        ``PRICE_FLOOR_PERCENT`` of the step), a WARN for the last stage's imbalance; random imbalance
        names nobody and fires nothing."""
        from tpudoctor.findings import Finding, FindingKind, Severity, Status

        w = self.whatif
        if not w.known:
            return []
        out = []
        for r in w.priced_workers.to_dict(orient="records"):
            percent = float(r["persistent_saved_percent"])
            since = f" since step {r['onset_step']}" if r["onset_step"] is not None else ""
            out.append(Finding(
                "pipeline-straggler-cost", None,
                f"Rank {r['rank']} (dp rank {r['dp_rank']}, stage {r['stage']}) is persistently slow{since}: "
                f"{percent:.0f}% of the step", Status.FAIL,
                f"Its {r['time_class']} time exceeds its stage peers' in more steps than chance allows (sign test "
                f"p={r['p_value']:.2g}); removing that excess saves {r['persistent_saved_ms']:.1f} ms per step; all its "
                f"ops at the typical duration: {r['saved_ms']:.1f} ms.",
                Severity.HIGH if percent >= 20 else Severity.MEDIUM,
                evidence={k: r[k] for k in ("rank", "dp_rank", "stage", "persistent_saved_ms", "saved_ms", "p_value",
                                            "onset_step", "time_class")}, kind=FindingKind.PROFILE))
        if w.cause == "stage imbalance":
            out.append(Finding("pipeline-stage-imbalance", None,
                               f"The last stage (stage {w.m_s_stage}) is imbalanced: M_S = {w.m_s:.2f}", Status.WARN,
                               f"Fixing the last stage removes {w.m_s:.2f} of the slowdown S = {w.slowdown:.3f}; no "
                               "single worker's excess is persistent and large enough to name.",
                               evidence={"m_s": w.m_s, "slowdown": w.slowdown}, kind=FindingKind.PROFILE))
        return out

    def to_dict(self) -> dict[str, Any]:
        from tpudoctor import __version__

        return {"kind": KIND, "tool_version": __version__, "source": self.source, "meta_source": self.meta_source,
                "duration_s": round(self.duration_s, 3), "whatif": self.whatif.to_dict(),
                "findings": [f.to_dict() for f in self.findings]}


def analyze_op_trace(path: str | os.PathLike[str]) -> OpTraceReport:
    """Read the trace at ``path`` (``InputError`` when it cannot be) and simulate its what-ifs."""
    from tpudoctor.profile.analysis.pipeline_whatif import pipeline_whatif
    from tpudoctor.profile.op_trace import read_op_trace

    trace = read_op_trace(path)
    return OpTraceReport(trace.path, trace.meta_path, pipeline_whatif(trace.ops, trace.meta))
