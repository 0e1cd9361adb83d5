from __future__ import annotations

import datetime as _dt
from typing import Any

from tpudoctor.check import Example
from tpudoctor.checks.slice._base import OUTCOMES, _SliceCheck
from tpudoctor.checks.slice._examples import STARTED, fanned_out, from_files, worker_report
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Finding, Remediation, Scope, Severity, Status, Step
from tpudoctor.pod.worker_ids import natural_key

CLOCK_SKEW_TOLERANCE_S = 2.0
"""Beyond this, log timestamps of different workers cannot be put in one order with confidence."""


class ClocksAgree(_SliceCheck):
    """A worker's run must lie inside the time the fan-out waited for it (or before its report was stored).

    With ``sent`` and ``received`` on the collector's clock, a worker clock offset ``d`` must satisfy
    ``sent <= started - d`` and ``finished - d <= received``; an offset outside that interval is certain.
    """

    id = "POD-005"
    title = "Worker clocks agree"
    step = Step.NODE
    severity = Severity.MEDIUM
    docs = "https://cloud.google.com/compute/docs/instances/configure-ntp"
    examples = (
        Example("in the window", fanned_out(worker_report("0"), worker_report("1")), Status.PASS),
        Example("worker 1 a minute ahead", fanned_out(worker_report("0"), worker_report(
            "1", started_at=STARTED + _dt.timedelta(seconds=60))), Status.WARN),
        Example("read from files", from_files(worker_report("0"), worker_report("1")), Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        offsets, judged = clock_offsets(facts.require(OUTCOMES))
        base = dict(id=self.id, step=self.step, title=self.title)
        if not judged:
            reason = "no report came with a receive time (reports read from local files)"
            return Finding(**base, status=Status.SKIP, message=reason, skip_reason=reason, severity=Severity.INFO)
        if not offsets:
            return Finding(**base, status=Status.PASS, severity=Severity.INFO,
                           message=f"the clocks of {judged} worker(s) agree with this machine's within "
                                   f"{CLOCK_SKEW_TOLERANCE_S:g}s", evidence={"workers_judged": judged})
        shown = ", ".join(f"worker {w} {'ahead' if s > 0 else 'behind'} by at least {abs(s):.1f}s"
                          for w, s in sorted(offsets.items(), key=lambda kv: natural_key(kv[0]))[:12])
        return Finding(
            **base, status=Status.WARN, severity=Severity.MEDIUM, scope=Scope.of(workers=list(offsets)),
            message=f"clock skew: {shown}; log times of different workers cannot be compared exactly",
            evidence={"offset_lower_bound_s": offsets, "tolerance_s": CLOCK_SKEW_TOLERANCE_S,
                      "workers_judged": judged},
            remediation=Remediation(
                text="Let chrony sync the clock to the metadata server's NTP (metadata.google.internal) on these "
                     "workers; then compare their logs again.",
                commands=("sudo systemctl restart chrony", "chronyc tracking")),
        )


def clock_offsets(outcomes: dict[str, Any]) -> tuple[dict[str, float], int]:
    """(worker -> the least its clock is off, + ahead / - behind, for the workers certainly off; how many
    workers could be judged: those whose report came with a receive time)."""
    offsets: dict[str, float] = {}
    judged = 0
    for worker, outcome in outcomes.items():
        report = outcome.report
        if report is None or outcome.received_at is None:
            continue
        judged += 1
        started = report.started_at
        finished = started.timestamp() + report.duration_s
        ahead_by = finished - outcome.received_at.timestamp()
        behind_by = (outcome.sent_at.timestamp() - started.timestamp()) if outcome.sent_at else float("-inf")
        if ahead_by > CLOCK_SKEW_TOLERANCE_S:
            offsets[worker] = round(ahead_by, 3)
        elif behind_by > CLOCK_SKEW_TOLERANCE_S:
            offsets[worker] = -round(behind_by, 3)
    return offsets, judged
