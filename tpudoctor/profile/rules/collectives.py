"""Time in collectives (all-reduce, all-gather, ... , Megascale): waiting for other hosts vs moving data."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import BreakdownFigures, HostResult
from tpudoctor.profile.rule import SHARE_OF_STEP, Example, ProfileRule

CROSS_HOST_TABLE = "cross_host"  # analysis.hosts.CROSS_HOST_TABLE (rules read HostResult only)
BY_KIND_TABLE = "collectives_by_kind"  # analysis.collectives.BY_KIND_TABLE

WAIT_FIXES = (
    "The time is waiting for another host, not moving data: make the late host arrive on time (see the "
    "straggler finding); faster links will not help",
)
TRANSFER_FIXES = (
    "Overlap collectives with compute (XLA async collectives, the latency-hiding scheduler)",
    "Send fewer bytes: bf16 gradients, gradient accumulation over micro-steps, a sharding that keeps traffic on ICI",
    "Multislice: check DCN bandwidth and megascale flags (e.g. --megascale_grpc_num_channels)",
)


def cross_host_row(host: HostResult) -> dict | None:
    rows = host.tables.get(CROSS_HOST_TABLE) or []
    return rows[0] if rows else None


def _host(collective: float, wait: float | None = None) -> HostResult:
    tables = {BY_KIND_TABLE: [{"kind": "all-reduce", "count": 12, "total_ms": 400.0}]}
    if wait is not None:
        tables[CROSS_HOST_TABLE] = [{"host": "h", "wait_percent": wait, "transfer_percent": collective - wait,
                                     "straggler": "other"}]
    return HostResult("h", breakdown=BreakdownFigures("host-loop-timeline", percent={"collective": collective}),
                      tables=tables)


class Collectives(ProfileRule):
    """Collective ops take a share of each step (xprof's device-collectives threshold, 3 %; high from
    its smart-suggestion collective bound, 30 %). Across hosts, the share is split into waiting for
    the last host to arrive and transfer (``analysis.cross_host``): waiting is fixed on the late host,
    transfer by sending less or overlapping it."""

    id = "collectives"
    title = "Collectives take little of the step"
    bottleneck = "communication-bound"
    scores_verdict = True
    lead_rank = 20
    needs = ("steps", "step-breakdown", "device-ops")
    COLLECTIVE_FINDING_PERCENT = 3.0
    COLLECTIVE_BOUND_PERCENT = 30.0
    docs = "https://openxla.org/xprof/megascale_stats"
    examples = (
        Example("no collectives", _host(0.0), Status.PASS),
        Example("all-reduce, one host", _host(12.0), Status.WARN),
        Example("waiting for a straggler", _host(90.0, wait=78.0), Status.FAIL),
    )

    def evaluate(self, host: HostResult):
        share = host.breakdown.part("collective")
        row = cross_host_row(host)
        kinds = host.tables.get(BY_KIND_TABLE) or []
        evidence = {SHARE_OF_STEP: round(share, 2), "by_kind": kinds[:8],
                    "wait_percent": None if row is None else row.get("wait_percent"),
                    "transfer_percent": None if row is None else row.get("transfer_percent"),
                    "straggler": None if row is None else row.get("straggler")}
        if share < self.COLLECTIVE_FINDING_PERCENT:
            return self.passed(f"collectives take {share:.1f}% of step time", evidence=evidence)
        severity = Severity.HIGH if share >= self.COLLECTIVE_BOUND_PERCENT else Severity.MEDIUM
        ops = ", ".join(f"{k.get('kind')} x{k.get('count')}" for k in kinds[:5])
        if row is not None and row.get("wait_percent") is not None:
            wait, transfer = float(row["wait_percent"]), float(row["transfer_percent"])
            waiting_on = (f" (waiting for the straggler {row['straggler']})"
                          if row.get("straggler") and row["straggler"] != host.host else "")
            title = (f"Collectives take {share:.1f}% of step time: {wait:.1f}% waiting for other hosts{waiting_on}, "
                     f"{transfer:.1f}% transfer")
            fixes = (WAIT_FIXES if wait > transfer else ()) + TRANSFER_FIXES
        else:
            title = f"Collectives take {share:.1f}% of step time"
            fixes = TRANSFER_FIXES
        return self.fired(severity, title, f"Collective ops: {ops or 'none named'}. Their time is not compute.",
                          evidence=evidence, fixes=fixes)
