from __future__ import annotations

from tpudoctor.check import Example
from tpudoctor.checks.slice._base import OUTCOMES, _WorkerProblemCheck
from tpudoctor.checks.slice._examples import fanned_out, from_files, no_answer, worker_report
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Status
from tpudoctor.pod.outcomes import WORKER_ANSWERED


class WorkersAnswered(_WorkerProblemCheck):
    """Every worker asked over ``gcloud compute tpus tpu-vm ssh`` answered in time with something to read
    (a worker that hung, refused ssh or sent no report is named, with how to look at it)."""

    id = WORKER_ANSWERED
    title = "Every worker answered"
    docs = "https://cloud.google.com/sdk/gcloud/reference/compute/tpus/tpu-vm/ssh"
    passed_message = "all {count} workers answered over gcloud ssh"
    examples = (
        Example("both answered", fanned_out(worker_report("0"), worker_report("1")), Status.PASS),
        Example("worker 1 hung", fanned_out(worker_report("0"), w1=no_answer("1")), Status.FAIL),
        Example("reports read from files", from_files(worker_report("0"), worker_report("1")), Status.SKIP),
    )

    def applies(self, facts: Facts) -> bool:
        """Only a fan-out asks workers to answer; reports read from files were asked nothing."""
        return _fanned_out(facts) or super().applies(facts)

    def evaluate(self, facts: Facts) -> CheckResult:
        if not _fanned_out(facts) and not super().applies(facts):
            return self.skip("the reports were read from files: no worker was asked to answer")
        return super().evaluate(facts)


def _fanned_out(facts: Facts) -> bool:
    return any(o.sent_at is not None for o in (facts.value(OUTCOMES) or {}).values())
