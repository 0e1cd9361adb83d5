"""The straggler: the host the others wait for at every step's collective."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import HostResult
from tpudoctor.profile.rule import Example, ProfileRule
from tpudoctor.profile.rules.collectives import CROSS_HOST_TABLE, cross_host_row


def _host(name: str, straggler: str | None) -> HostResult:
    row = {"host": name, "straggler": straggler, "delay_ms_median": 31.0, "cost_ms_per_step": 29.0,
           "others_wait_ms_per_step": 31.0, "last_arrival_steps": 12, "steps_compared": 12, "hosts": 4,
           "decided_by": "sign test and Wilcoxon signed-rank test"}
    return HostResult(name, tables={CROSS_HOST_TABLE: [row]})


class Straggler(ProfileRule):
    """Fires on the host that arrives last at the step's first collective, named by the cross-host
    analysis (``analysis.cross_host``: a sign test on last arrivals and a Wilcoxon signed-rank test
    on its lateness, so noise names nobody). It says by how much it is late per step and what the
    other hosts lose waiting for it."""

    id = "straggler"
    title = "This host is not a straggler"
    lead_rank = 5
    needs = ("steps", "device-ops", "other-hosts")
    docs = "https://hta.readthedocs.io/en/latest/source/features/lightweight_critical_path_analysis.html"
    examples = (
        Example("another host is late", _host("worker0", "worker2"), Status.PASS),
        Example("this host is late", _host("worker2", "worker2"), Status.FAIL),
        Example("single host", HostResult("h"), Status.PASS),
    )

    def evaluate(self, host: HostResult):
        row = cross_host_row(host)
        if row is None or row.get("straggler") != host.host:
            why = "single host or no collectives" if row is None else (
                f"the straggler is {row['straggler']}" if row.get("straggler") else "no straggler: "
                + str(row.get("decided_by", "")))
            return self.passed(why, evidence={"straggler": None if row is None else row.get("straggler")})
        evidence = {k: row.get(k) for k in ("delay_ms_median", "cost_ms_per_step", "others_wait_ms_per_step",
                                            "last_arrival_steps", "steps_compared", "last_arrival_p_value",
                                            "lateness_p_value", "decided_by")}
        others = max(int(row.get("hosts") or 2) - 1, 1)
        return self.fired(
            Severity.HIGH,
            f"Straggler: {host.host} arrives last at the collective ({row['delay_ms_median']:.1f} ms late per step)",
            f"{host.host} reached the step's first collective last in {row['last_arrival_steps']} of "
            f"{row['steps_compared']} steps, a median {row['delay_ms_median']:.2f} ms after the other hosts; the "
            f"other {others} host(s) wait {row.get('others_wait_ms_per_step') or 0:.2f} ms per step for it, and the "
            f"job loses about {row.get('cost_ms_per_step') or 0:.2f} ms per step.",
            evidence=evidence,
            fixes=(f"Look at what {host.host} does before each step that the others do not: Python work, logging or "
                   "metrics, checkpoint or evaluation on one host only, a slower input pipeline or disk",
                   f"Compare {host.host}'s own findings (its verdict and host-side ops) with another host's",
                   f"Check the machine: another process on {host.host}, thermal throttling, a noisy neighbour"),
            commands=("tpudoctor check",))
