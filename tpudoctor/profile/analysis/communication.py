"""Findings from the cross-host analysis: the straggler, and time in collectives (wait vs transfer).

Kept apart from ``verdict.py`` so they can become profile rules on their own. Thresholds: xprof's
smart-suggestion collective bound (``kCollectiveBoundThresholdInPercent = 30``) for a high finding,
its device-collectives "moderately" 3 % floor for any finding.
"""

from __future__ import annotations

from tpudoctor.profile.analysis.verdict import Finding

COLLECTIVE_BOUND_PERCENT = 30.0
COLLECTIVE_FINDING_PERCENT = 3.0

STRAGGLER_FIXES = [
    "Look at what {host} does before each step that the others do not: Python work, logging or metrics, "
    "checkpoint or evaluation on one host only, a slower input pipeline or disk",
    "Compare {host}'s own report (its verdict and host-side ops) with another host's",
    "Check the machine: another process on {host}, thermal throttling, a noisy neighbour (tpudoctor check)",
]
WAIT_FIXES = [
    "The time is waiting, not moving data: make the late host arrive on time (see the straggler finding); "
    "faster links will not help",
]
TRANSFER_FIXES = [
    "Overlap collectives with compute (XLA async collectives; latency-hiding scheduler flags)",
    "Send fewer bytes: bf16 gradients, gradient accumulation over micro-steps, sharding that keeps traffic on ICI",
    "Multislice: check DCN bandwidth and megascale flags (e.g. --megascale_grpc_num_channels)",
]


def straggler_finding(straggler, n_hosts: int) -> Finding | None:
    """A finding for the straggler host (``cross_host.Straggler``), or None when none is named."""
    if straggler.host is None:
        return None
    host = straggler.host
    return Finding(
        "straggler", "high",
        f"Straggler: {host} arrives last at the collective ({straggler.delay_ms_median:.1f} ms late per step)",
        f"{host} reached the step's first collective last in {straggler.last_arrival_steps} of "
        f"{straggler.steps_compared} steps, a median {straggler.delay_ms_median:.2f} ms after the other hosts; "
        f"the other {n_hosts - 1} hosts wait {straggler.others_wait_ms_per_step or 0:.2f} ms per step for it, "
        f"and the job loses about {straggler.cost_ms_per_step:.2f} ms per step.",
        {"host": host, "delay_ms_median": straggler.delay_ms_median, "cost_ms_per_step": straggler.cost_ms_per_step,
         "others_wait_ms_per_step": straggler.others_wait_ms_per_step,
         "last_arrival_steps": straggler.last_arrival_steps, "steps_compared": straggler.steps_compared,
         "last_arrival_p_value": straggler.last_arrival_p_value, "lateness_p_value": straggler.lateness_p_value,
         "decided_by": straggler.decided_by},
        [fix.format(host=host) for fix in STRAGGLER_FIXES])


def collectives_finding(host_row: dict | None, by_kind, collective_percent: float, straggler) -> Finding | None:
    """Time in collectives for one host: ``host_row`` is its ``CrossHostAnalysis.per_host`` row (None
    for a single host, where wait and transfer cannot be told apart)."""
    if collective_percent < COLLECTIVE_FINDING_PERCENT:
        return None
    wait = host_row["wait_percent"] if host_row else None
    transfer = host_row["transfer_percent"] if host_row else None
    severity = "high" if collective_percent >= COLLECTIVE_BOUND_PERCENT else "medium"
    kinds = ", ".join(f"{r['kind']} x{r['count']}" for r in by_kind.head(5).to_dict(orient="records"))
    if wait is not None:
        split = f"{wait:.1f}% waiting for other hosts, {transfer:.1f}% transfer"
        waiting_on = (f" (waiting for {straggler.host})" if straggler is not None and straggler.host
                      and host_row.get("host") != straggler.host else "")
        summary = f"Collectives take {collective_percent:.1f}% of step time: {split}{waiting_on}. Ops: {kinds}."
    else:
        summary = f"Collectives take {collective_percent:.1f}% of step time. Ops: {kinds}."
    fixes = (WAIT_FIXES if wait is not None and transfer is not None and wait > transfer else []) + TRANSFER_FIXES
    return Finding(
        "collectives", severity, f"Collectives take {collective_percent:.1f}% of step time", summary,
        {"collective_percent": round(collective_percent, 2),
         "wait_percent": None if wait is None else round(float(wait), 2),
         "transfer_percent": None if transfer is None else round(float(transfer), 2),
         "by_kind": by_kind.to_dict(orient="records"),
         "straggler": straggler.host if straggler is not None else None},
        fixes)


def apply_cross_host(hosts: dict, cross) -> None:
    """Add the cross-host findings to each ``HostAnalysis`` and explain a communication-bound verdict
    with the wait/transfer split (the verdicts themselves were decided per host)."""
    from tpudoctor.profile.analysis.verdict import order_findings

    rows = {r["host"]: r for r in cross.per_host.to_dict(orient="records")} if cross is not None else {}
    straggler = cross.straggler if cross is not None else None
    for name, r in hosts.items():
        if r.collectives is None:
            continue
        found = collectives_finding(rows.get(name), r.collectives.by_kind, r.collectives.collective_percent, straggler)
        extra = [found] if found else []
        if straggler is not None and straggler.host == name:
            extra.insert(0, straggler_finding(straggler, len(hosts)))
        r.findings = order_findings([f for f in r.findings if f.id not in ("collectives", "straggler")] + extra,
                                    r.verdict)
        row = rows.get(name)
        if r.verdict == "communication-bound" and row:
            r.verdict_reason += (f": {row['wait_percent']:.1f}% waiting for other hosts, "
                                 f"{row['transfer_percent']:.1f}% transfer")
            if straggler is not None and straggler.host and straggler.host != name:
                r.verdict_reason += f" (the wait is for the straggler {straggler.host})"
