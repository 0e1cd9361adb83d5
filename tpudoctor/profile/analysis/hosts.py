"""Per-host figures of a multi-host capture, and the straggler from the cross-host collective analysis.

The straggler is the host that arrives last at the step's collective (``cross_host``), not the host
with the highest mean step time: in synchronous training every host's step takes the same time.
"""

from __future__ import annotations

import dataclasses

from tpudoctor.profile.analysis.collectives import from_tables
from tpudoctor.profile.analysis.cross_host import CrossHostAnalysis, combine_hosts

CROSS_HOST_TABLE = "cross_host"
"""``HostResult.tables`` name of a host's row of the combined analysis (what rules read)."""


@dataclasses.dataclass
class HostsSummary:
    """``per_host``: one record per host: ``host``, ``step_method``, ``steps``, ``step_time_mean_ms``,
    ``input_percent``, ``idle_percent``, ``compile_ms``, ``duty_cycle_percent``, ``collective_percent``.
    ``cross_host``: the combined analysis of two or more hosts (None for one host)."""

    per_host: list[dict]
    cross_host: CrossHostAnalysis | None = None

    @property
    def straggler(self) -> str | None:
        """The host named by ``cross_host.decide_straggler``; None within noise or for one host."""
        return self.cross_host.straggler.host if self.cross_host is not None else None

    @property
    def straggler_slowdown_percent(self) -> float | None:
        """The straggler's cost per step as a share of the median step."""
        return self.cross_host.straggler.slowdown_percent if self.straggler is not None else None


def summarize_hosts(results: dict) -> HostsSummary:
    """``results``: host name -> ``HostResult``."""
    rows = [{"host": name, "step_method": r.steps.method, "steps": r.steps.count,
             "step_time_mean_ms": r.steps.stats.get("mean_ms"), "input_percent": r.breakdown.part("input"),
             "idle_percent": r.breakdown.part("idle"), "compile_ms": r.compile.compile_ms,
             "duty_cycle_percent": r.device.duty_cycle_percent,
             "collective_percent": r.breakdown.part("collective")} for name, r in results.items()]
    maps = {name: from_tables(name, r.tables) for name, r in results.items()}
    maps = {name: m for name, m in maps.items() if m is not None}
    return HostsSummary(rows, combine_hosts(maps) if len(results) >= 2 else None)


def cross_host_rows(summary: HostsSummary) -> dict[str, dict]:
    """Per host, what its rules need of the combined analysis: its collective/wait/transfer shares,
    the straggler and, on the straggler itself, the test's figures. Plain JSON-ready values."""
    cross = summary.cross_host
    if cross is None:
        return {}
    s = cross.straggler
    straggler = {"straggler": s.host, "delay_ms_median": s.delay_ms_median, "cost_ms_per_step": s.cost_ms_per_step,
                 "others_wait_ms_per_step": s.others_wait_ms_per_step, "last_arrival_steps": s.last_arrival_steps,
                 "steps_compared": s.steps_compared, "last_arrival_p_value": s.last_arrival_p_value,
                 "lateness_p_value": s.lateness_p_value, "decided_by": s.decided_by,
                 "hosts": int(len(cross.per_host))}
    out = {}
    for row in cross.per_host.to_dict(orient="records"):
        out[str(row["host"])] = {**{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}, **straggler}
    return out
