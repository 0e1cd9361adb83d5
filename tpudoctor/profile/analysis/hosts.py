"""Per-host figures of a multi-host capture, and the straggler: the host whose steps take longest."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

STRAGGLER_PERCENT = 5.0  # a host this much slower than the median host is named


@dataclasses.dataclass
class HostsSummary:
    """``per_host``: ``host``, ``step_method``, ``steps``, ``step_time_mean_ms``, ``input_percent``,
    ``idle_percent``, ``compile_ms``, ``duty_cycle_percent``. ``straggler`` is the slowest host when it
    is at least ``STRAGGLER_PERCENT`` slower than the median host."""

    per_host: pd.DataFrame
    straggler: str | None
    straggler_slowdown_percent: float | None


def summarize_hosts(results: dict) -> HostsSummary:
    rows = []
    for name, r in results.items():
        rows.append({
            "host": name, "step_method": r.steps.method, "steps": r.steps.count,
            "step_time_mean_ms": r.step_stats.get("mean_ms", np.nan),
            "input_percent": r.input.input_percent, "idle_percent": r.input.idle_percent,
            "compile_ms": r.recompilation.total_compile_ms, "duty_cycle_percent": r.device.duty_cycle_percent,
        })
    per_host = pd.DataFrame(rows)
    straggler = slowdown = None
    times = per_host["step_time_mean_ms"].dropna() if not per_host.empty else pd.Series(dtype=float)
    if len(times) >= 2:
        median = float(times.median())
        worst = per_host.loc[times.idxmax()]
        slowdown = 100 * (float(worst["step_time_mean_ms"]) - median) / median if median > 0 else 0.0
        if slowdown >= STRAGGLER_PERCENT:
            straggler = str(worst["host"])
        else:
            slowdown = None
    return HostsSummary(per_host, straggler, slowdown)
