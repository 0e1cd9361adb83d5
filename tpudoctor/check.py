"""The check contract: one declarative class per check, one pure ``evaluate(facts)`` method.

A check never does I/O. It declares the facts it reads; fact providers gather them once, with
timeouts, before any check runs. That keeps every check testable with a plain facts dict, and
its ``examples`` (at least one passing and one failing) double as its tests and its docs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Remediation, Severity, Status, Step
from tpudoctor.rule import Example, Rule

CHECK_ID_PATTERN = re.compile(r"^[A-Z][A-Z0-9]*-[0-9]{3}$")




class Check(Rule[Facts]):
    """Base class for every check. Subclasses set the metadata and implement ``evaluate``."""

    step: ClassVar[Step]
    requires: ClassVar[tuple[str, ...]] = ()
    facts: ClassVar[tuple[str, ...]] = ()
    severity: ClassVar[Severity] = Severity.HIGH
    timeout_s: ClassVar[float] = 5.0
    examples: ClassVar[tuple[Example, ...]] = ()
    runs_on: ClassVar[str] = "worker"
    """``worker``: ``tpudoctor check`` on one machine; ``slice``: a merged view of every worker's report
    (``tpudoctor merge``, ``check --all-workers``), where the workers' reports are the facts."""

    def evaluate(self, facts: Facts) -> CheckResult:
        raise NotImplementedError

    @classmethod
    def example_input(cls, example: Example) -> Facts:
        return example.input if isinstance(example.input, Facts) else Facts(example.input)

    def applies(self, facts: Facts) -> bool:
        """False: the check has nothing to say on these facts and the run records no result for it (a
        slice check about workers' trouble that no worker had). Most checks always apply."""
        return True

    # Result builders keep the check's identity in one place.
    def _result(
        self,
        status: Status,
        message: str,
        *,
        evidence: Mapping[str, Any] | None = None,
        remediation: Remediation | None = None,
        severity: Severity | None = None,
        skip_reason: str | None = None,
        title: str | None = None,
    ) -> CheckResult:
        if remediation is not None and remediation.docs_url is None and self.docs:
            remediation = dataclasses.replace(remediation, docs_url=self.docs)
        return CheckResult(
            id=self.id,
            step=self.step,
            title=title or self.title,
            status=status,
            message=message,
            severity=severity or self.severity,
            evidence=dict(evidence or {}),
            remediation=remediation,
            skip_reason=skip_reason,
        )

    def passed(self, message: str, *, evidence: Mapping[str, Any] | None = None, title: str | None = None) -> CheckResult:
        return self._result(Status.PASS, message, evidence=evidence, severity=Severity.INFO, title=title)

    def warn(
        self,
        message: str,
        *,
        evidence: Mapping[str, Any] | None = None,
        remediation: Remediation | None = None,
        severity: Severity | None = None,
    ) -> CheckResult:
        return self._result(
            Status.WARN, message, evidence=evidence, remediation=remediation,
            severity=severity or Severity.MEDIUM,
        )

    def fail(
        self,
        message: str,
        *,
        evidence: Mapping[str, Any] | None = None,
        remediation: Remediation | None = None,
        severity: Severity | None = None,
    ) -> CheckResult:
        return self._result(
            Status.FAIL, message, evidence=evidence, remediation=remediation, severity=severity
        )

    def skip(self, reason: str, *, evidence: Mapping[str, Any] | None = None) -> CheckResult:
        return self._result(
            Status.SKIP, reason, evidence=evidence, severity=Severity.INFO, skip_reason=reason
        )

    def error(self, message: str, *, evidence: Mapping[str, Any] | None = None) -> CheckResult:
        """The check could not judge (an API answered 5xx after retries, say)."""
        return self._result(Status.ERROR, message, evidence=evidence, severity=Severity.MEDIUM)


def remediation(text: str, *commands: str, docs_url: str | None = None) -> Remediation:
    """Shorthand: ``remediation("Start the node.", "gcloud compute tpus tpu-vm start ...")``."""
    return Remediation(text=text, commands=tuple(commands), docs_url=docs_url)
