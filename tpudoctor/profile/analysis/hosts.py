"""Per-host figures of a multi-host capture, and the straggler: the host whose steps take longest."""

from __future__ import annotations

import dataclasses
import statistics

STRAGGLER_PERCENT = 5.0  # a host this much slower than the median host is named


@dataclasses.dataclass
class HostsSummary:
    """``per_host``: one record per host: ``host``, ``step_method``, ``steps``, ``step_time_mean_ms``,
    ``input_percent``, ``idle_percent``, ``compile_ms``, ``duty_cycle_percent``. ``straggler`` is the
    slowest host when it is at least ``STRAGGLER_PERCENT`` slower than the median host."""

    per_host: list[dict]
    straggler: str | None
    straggler_slowdown_percent: float | None


def summarize_hosts(results: dict) -> HostsSummary:
    """``results``: host name -> ``HostResult``."""
    rows = [{"host": name, "step_method": r.steps.method, "steps": r.steps.count,
             "step_time_mean_ms": r.steps.stats.get("mean_ms"), "input_percent": r.breakdown.part("input"),
             "idle_percent": r.breakdown.part("idle"), "compile_ms": r.compile.compile_ms,
             "duty_cycle_percent": r.device.duty_cycle_percent} for name, r in results.items()]
    timed = [r for r in rows if r["step_time_mean_ms"] is not None]
    straggler = slowdown = None
    if len(timed) >= 2:
        median = statistics.median(r["step_time_mean_ms"] for r in timed)
        worst = max(timed, key=lambda r: r["step_time_mean_ms"])
        slowdown = 100 * (worst["step_time_mean_ms"] - median) / median if median > 0 else 0.0
        if slowdown >= STRAGGLER_PERCENT:
            straggler = str(worst["host"])
        else:
            slowdown = None
    return HostsSummary(rows, straggler, slowdown)
