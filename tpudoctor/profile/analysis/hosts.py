"""Per-host figures of a multi-host capture, and the straggler from the cross-host collective analysis.

The straggler is the host that arrives last at the step's collective (``cross_host``), not the host
with the highest mean step time: in synchronous training every host's step takes the same time.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.cross_host import CrossHostAnalysis, combine_hosts


@dataclasses.dataclass
class HostsSummary:
    """``per_host``: ``host``, ``step_method``, ``steps``, ``step_time_mean_ms``, ``input_percent``,
    ``idle_percent``, ``compile_ms``, ``duty_cycle_percent``, ``collective_percent``. ``straggler``
    is the host named by ``cross_host.decide_straggler`` (None within noise), with its cost per step
    as a share of the median step in ``straggler_slowdown_percent``; ``cross_host`` has the details."""

    per_host: pd.DataFrame
    straggler: str | None
    straggler_slowdown_percent: float | None
    cross_host: CrossHostAnalysis | None = None


def summarize_hosts(results: dict) -> HostsSummary:
    rows = []
    for name, r in results.items():
        collectives = getattr(r, "collectives", None)
        rows.append({
            "host": name, "step_method": r.steps.method, "steps": r.steps.count,
            "step_time_mean_ms": r.step_stats.get("mean_ms", np.nan),
            "input_percent": r.input.input_percent, "idle_percent": r.input.idle_percent,
            "compile_ms": r.recompilation.total_compile_ms, "duty_cycle_percent": r.device.duty_cycle_percent,
            "collective_percent": collectives.collective_percent if collectives is not None else np.nan,
        })
    per_host = pd.DataFrame(rows)
    maps = {name: r.collectives for name, r in results.items() if getattr(r, "collectives", None) is not None}
    cross = combine_hosts(maps) if len(results) >= 2 else None
    if cross is None or cross.straggler.host is None:
        return HostsSummary(per_host, None, None, cross)
    return HostsSummary(per_host, cross.straggler.host, cross.straggler.slowdown_percent, cross)
