"""The cross-host collective analysis of a multi-host capture, and each host's row of it for the rules.

The straggler is the host that arrives last at the step's collective (``cross_host``), not the host
with the highest mean step time: in synchronous training every host's step takes the same time.
"""

from __future__ import annotations

from tpudoctor.profile.analysis.collectives import from_tables
from tpudoctor.profile.analysis.cross_host import CrossHostAnalysis, combine_hosts

CROSS_HOST_TABLE = "cross_host"
"""``HostResult.tables`` name of a host's row of the combined analysis (what rules read)."""


def cross_host_analysis(results: dict) -> CrossHostAnalysis | None:
    """The combined analysis of two or more hosts' collectives (``results``: host name ->
    ``HostResult``); None for one host."""
    if len(results) < 2:
        return None
    maps = {name: from_tables(name, r.tables) for name, r in results.items()}
    return combine_hosts({name: m for name, m in maps.items() if m is not None})


def cross_host_rows(cross: CrossHostAnalysis | None) -> dict[str, dict]:
    """Per host, what its rules need of the combined analysis: its collective/wait/transfer shares,
    the straggler and, on the straggler itself, the test's figures. Plain JSON-ready values."""
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
