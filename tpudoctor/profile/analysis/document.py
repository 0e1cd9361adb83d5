"""The JSON report document of a ``ProfileAnalysis`` (schema ``tpudoctor/schema/profile_report``).

Every renderer and ``tpudoctor compare`` work from this one document, so a saved JSON report and a
fresh analysis render the same.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from tpudoctor import __version__

REPORT_KIND = "tpudoctor.profile_report"


def report_document(analysis) -> dict:
    from tpudoctor.profile.analysis import REPORT_SCHEMA_VERSION

    p = analysis.primary
    doc = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "kind": REPORT_KIND,
        "tool_version": __version__,
        "source": analysis.source,
        "run": analysis.run,
        "verdict": p.verdict,
        "verdict_reason": p.verdict_reason,
        "primary_host": p.host,
        "device": p.device_kind,
        "framework": p.framework,
        "kpis": kpis(p),
        "steps": {
            "method": p.steps.method, "program": p.steps.program, "reason": p.steps.reason,
            "count": p.steps.count, "stats": _clean(p.step_stats),
        },
        "breakdown": {
            "model": p.input.model,
            "classification": p.input.classification,
            "percent": _clean({
                # collectives (wait + transfer) are their own part, carved out of compute
                "compute": max(p.input.compute_percent - _collective_percent(p), 0.0),
                "collective": _collective_percent(p), "input": p.input.input_percent,
                "idle": p.input.idle_percent, "compile": p.input.compile_percent,
                "host_callback": p.input.host_callback_percent, "other": p.input.other_percent,
            }),
            "per_step": records(p.input.per_step, 500),
            "input_stages": records(p.input.input_stages, 10),
            "idle_gaps": records(p.input.gaps, 50),
            "device_timeline_span_ms": _num(p.input.gaps.attrs.get("timeline_span_ms")),
        },
        "findings": [_clean(dataclasses.asdict(f)) for f in p.findings],
        "recompilation": {
            "compile_count": p.recompilation.total_compile_count,
            "compile_ms": _num(p.recompilation.total_compile_ms),
            "share_of_capture_percent": _num(p.recompilation.share_of_capture_percent),
            "program_cache_misses": p.recompilation.program_cache_misses,
            "programs_in_metadata": p.recompilation.programs_in_metadata,
            "tf_tracing_count_max": p.recompilation.tf_tracing_count_max,
            "functions": records(p.recompilation.functions, 50),
        },
        "host_ops": {
            "device_op_ms": _num(p.host_ops.device_busy_ms),
            "host_offload_device_ms": _num(p.host_ops.host_offload_device_ms),
            "host_offload_share_of_device_percent": _num(p.host_ops.host_offload_share_of_device_percent),
            "outside_compilation_share_of_device_percent": _num(p.host_ops.outside_compilation_share_of_device_percent),
            "callback_ms": _num(p.host_ops.callback_ms),
            "host_transfer_ms": _num(p.host_ops.host_transfer_ms),
            "eager_ms": _num(p.host_ops.eager_ms),
            "table": records(p.host_ops.table, 40),
        },
        "device_ops": {
            "duty_cycle_percent": _num(p.device.duty_cycle_percent),
            "idle_percent": _num(p.device.idle_percent),
            "mxu_utilization_percent": _num(p.device.mxu_utilization_percent),
            "hbm_utilization_percent": _num(p.device.hbm_utilization_percent),
            "flops_utilization_percent": _num(p.device.flops_utilization_percent),
            "top_ops": records(p.device.top_ops, 20),
            "categories": records(p.device.categories, 20),
            "per_core": records(p.device.per_core, 64),
        },
        "hosts": [
            {"host": h.host, "verdict": h.verdict, "verdict_reason": h.verdict_reason, "kpis": kpis(h)}
            for h in analysis.hosts.values()
        ],
        "straggler": _straggler(analysis.summary),
        "cross_host": _cross_host(analysis.summary),
        "failed_hosts": [{"host": k, "error": v} for k, v in analysis.failed_hosts.items()],
    }
    return doc


def _collective_percent(h) -> float:
    return h.collectives.collective_percent if getattr(h, "collectives", None) is not None else 0.0


def _straggler(summary) -> dict | None:
    if not summary.straggler:
        return None
    s = summary.cross_host.straggler
    return _clean({"host": s.host, "slowdown_percent": summary.straggler_slowdown_percent,
                   "delay_ms_median": s.delay_ms_median, "cost_ms_per_step": s.cost_ms_per_step,
                   "others_wait_ms_per_step": s.others_wait_ms_per_step, "last_arrival_steps": s.last_arrival_steps,
                   "steps_compared": s.steps_compared, "decided_by": s.decided_by})


def _cross_host(summary) -> dict | None:
    cross = getattr(summary, "cross_host", None)
    if cross is None:
        return None
    s = cross.straggler
    return _clean({"aligned_by": cross.aligned_by, "per_host": records(cross.per_host, 1024),
                   "straggler_test": {"candidate": s.candidate, "steps_compared": s.steps_compared,
                                      "last_arrival_steps": s.last_arrival_steps,
                                      "last_arrival_p_value": s.last_arrival_p_value,
                                      "lateness_p_value": s.lateness_p_value, "delay_ms_median": s.delay_ms_median,
                                      "decided_by": s.decided_by},
                   "notes": cross.notes})


def kpis(h) -> dict:
    """The figures ``tpudoctor compare`` diffs; all numbers, units in the names."""
    return _clean({
        "step_time_mean_ms": h.step_stats.get("mean_ms"),
        "step_time_median_ms": h.step_stats.get("median_ms"),
        "step_count": h.steps.count,
        "input_percent": h.input.input_percent,
        "idle_percent": h.input.idle_percent,
        "compute_percent": h.input.compute_percent,
        "compile_count": h.recompilation.total_compile_count,
        "compile_ms": h.recompilation.total_compile_ms,
        "duty_cycle_percent": h.device.duty_cycle_percent,
        "host_callback_ms": h.host_ops.callback_ms,
        "host_offload_share_of_device_percent": h.host_ops.host_offload_share_of_device_percent,
        "capture_window_ms": h.window_ms,
        "collective_percent": _collective_percent(h),
    })


def records(frame: pd.DataFrame, limit: int) -> list[dict]:
    return [_clean(r) for r in frame.head(limit).to_dict(orient="records")]


def _num(v):
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) or math.isinf(v) else round(v, 4)


def _clean(obj):
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if hasattr(obj, "item"):
        obj = obj.item()
    if isinstance(obj, bool):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return _num(obj)
    if obj is pd.NA or str(obj) in ("<NA>", "nan", "NaT"):
        return None
    return str(obj)
