"""What the slice checks share: where they run, and the fold of a worker's own trouble."""

from __future__ import annotations

from typing import Any, ClassVar

from tpudoctor.check import Check
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Step
from tpudoctor.pod.folding import fold_one, worker_problems

OUTCOMES = "slice.outcomes"
EXPECTED = "slice.expected_workers"
TARGET = "slice.target"


class _SliceCheck(Check):
    runs_on = "slice"
    facts = (OUTCOMES,)
    severity = Severity.HIGH


class _WorkerProblemCheck(_SliceCheck):
    """A worker that gave no report says why in a finding with this check's id (made by the fan-out or the
    report store); the check folds them into one result naming the workers. It says nothing when no worker
    had this trouble: the other results already show that the workers answered."""

    step = Step.NODE
    passed_message: ClassVar[str] = ""

    def applies(self, facts: Facts) -> bool:
        return bool(worker_problems(facts.value(OUTCOMES) or {}, self.id))

    def evaluate(self, facts: Facts) -> CheckResult:
        outcomes: dict[str, Any] = facts.require(OUTCOMES)
        pairs = worker_problems(outcomes, self.id)
        if pairs:
            return fold_one(pairs, total=len(outcomes))
        return self.passed(self.passed_message.format(count=len(outcomes)))
