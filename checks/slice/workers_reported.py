from __future__ import annotations

from typing import Any

from tpudoctor.check import Example
from tpudoctor.checks.slice._base import EXPECTED, OUTCOMES, _SliceCheck
from tpudoctor.checks.slice._examples import from_files, worker_report
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Finding, Remediation, Scope, Severity, Status, Step
from tpudoctor.pod.worker_ids import describe_workers, natural_key


class WorkersReported(_SliceCheck):
    """Every worker the slice has (from ``--workers``, the TPU API or the reports' own metadata) has a
    report; the missing ones are named."""

    id = "POD-003"
    title = "Every worker of the slice has a report"
    step = Step.NODE
    facts = (OUTCOMES, EXPECTED)
    docs = "https://cloud.google.com/tpu/docs/jax-pods"
    examples = (
        Example("both reported", from_files(worker_report("0"), worker_report("1")), Status.PASS),
        Example("worker 2 is missing", from_files(worker_report("0"), worker_report("1"), expected=("0", "1", "2")),
                Status.FAIL),
        Example("size unknown", from_files(worker_report("0"), expected=()), Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        outcomes: dict[str, Any] = facts.require(OUTCOMES)
        expected: list[str] = facts.require(EXPECTED)
        base = dict(id=self.id, step=self.step, title=self.title)
        present = set(outcomes)
        missing = [w for w in expected if w not in present]
        extra = sorted(present - set(expected), key=natural_key) if expected else []
        evidence = {"workers_expected": expected, "workers_present": sorted(present, key=natural_key)}
        if not expected:
            return Finding(**base, status=Status.SKIP, message="the slice's size is unknown",
                           severity=Severity.INFO, skip_reason="the slice's size is unknown", evidence=evidence)
        if missing:
            return Finding(
                **base, status=Status.FAIL, severity=Severity.HIGH, evidence=evidence | {"missing": missing},
                message=f"{len(missing)} of {len(expected)} workers have no report ({describe_workers(missing)})",
                scope=Scope.of(workers=missing),
                remediation=Remediation(
                    text="A worker without a report either never ran tpudoctor (its startup script or pod did not "
                         "start) or could not write the report. Look at that worker first: a worker that is down "
                         "stops the whole slice.",
                    commands=("kubectl get pods -l jobset.sigs.k8s.io/jobset-name -o wide",)
                    if not any(o.report and o.report.target.tpu for o in outcomes.values()) else ()),
            )
        message = f"all {len(expected)} workers reported"
        if extra:
            message += f" (and {describe_workers(extra)}, outside the expected list)"
        return Finding(**base, status=Status.PASS, severity=Severity.INFO, message=message, evidence=evidence)
