"""Restarts and what they cost: redone steps and the time down until the next start."""

from __future__ import annotations

from tpudoctor.findings import Status
from tpudoctor.goodput.rule import Example, GoodputRule
from tpudoctor.goodput.rules._common import badput, example_goodput, level

WASTED = "WASTED_PROGRESS_FROM_DISRUPTION"
RECOVERY = "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION"
FIXES = (
    "Find why each start ended: tpudoctor check --log-file LOG names the failure (bad chip, HBM out of memory, "
    "a hang, a preemption) with its fix",
    "Checkpoint more often, asynchronously so that it costs little: each restart redoes the steps since the last "
    "checkpoint",
    "Restart in place quickly: keep the slice (GKE JobSet failurePolicy.maxRestarts, XPK --max-restarts) and the "
    "compilation cache, so a restart does not wait for new hardware and recompilation",
)


class FrequentRestarts(GoodputRule):
    """Restarts: the steps redone after each one and the time from a failure to the next start, as a share of
    wall time."""

    id = "frequent-restarts"
    title = "Restarts cost little"
    bucket = WASTED
    WARN_PERCENT = 5.0
    FAIL_PERCENT = 15.0
    WARN_RESTARTS = 3
    docs = "https://cloud.google.com/blog/products/ai-machine-learning/goodput-metric-as-measure-of-ml-productivity"
    examples = (
        Example("no restart", example_goodput(**{WASTED: 0.0, RECOVERY: 0.0}), Status.PASS),
        Example("one cheap restart", example_goodput(**{WASTED: 1.0, RECOVERY: 1.0}, restarts=1), Status.PASS),
        Example("costly", example_goodput(**{WASTED: 4.0, RECOVERY: 3.0}, restarts=2), Status.WARN),
        Example("very costly", example_goodput(**{WASTED: 10.0, RECOVERY: 9.0}, restarts=5), Status.FAIL),
        Example("many restarts, times unknown", example_goodput(**{WASTED: None, RECOVERY: None},
                                                                      restarts=4), Status.WARN),
    )

    def evaluate(self, goodput):
        restarts = int(goodput.get("restarts") or 0)
        wasted, recovery = badput(goodput, WASTED), badput(goodput, RECOVERY)
        known = wasted.get("percent") is not None and recovery.get("percent") is not None
        pct = min(float(wasted.get("percent") or 0.0) + float(recovery.get("percent") or 0.0), 100.0)
        evidence = {"restarts": restarts, "repeated_steps": goodput.get("repeated_steps"),
                    "wasted_progress_s": wasted.get("seconds"), "recovery_s": recovery.get("seconds"),
                    "cost_percent": pct if known else None,
                    "thresholds_percent": {"warn": self.WARN_PERCENT, "fail": self.FAIL_PERCENT}}
        severity = level(pct, self.WARN_PERCENT, self.FAIL_PERCENT) if known else None
        if severity is None and restarts >= self.WARN_RESTARTS:
            from tpudoctor.findings import Severity

            severity = Severity.MEDIUM
        if severity is None:
            cost = f"; they cost {pct:.1f}% of the wall time" if known and restarts else ""
            return self.passed(f"{restarts} restart(s){cost}", evidence=evidence)
        cost = f" and cost {pct:.1f}% of the wall time" if known else " (their cost is unknown: no timestamps)"
        return self.fired(severity, f"{restarts} restart(s){cost}",
                          f"The job started {restarts + 1} times{cost}: "
                          f"{goodput.get('repeated_steps') or 0} step(s) were done again.",
                          evidence=evidence, fixes=FIXES)
