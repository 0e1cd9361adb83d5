"""What each worker gave a merge: its report, or a finding scoped to it that says why there is none.

The fan-out (``check --all-workers``), ``tpudoctor merge`` and ``hang``'s pod view make these; the slice
checks (``tpudoctor.checks.slice``) judge them as facts.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any

from tpudoctor.findings import Finding, Remediation, Report, Scope, Severity, Status, Step

# The ids of the slice checks that fold a worker's own trouble (a worker problem carries one of them).
WORKER_ANSWERED = "POD-001"
TPUDOCTOR_INSTALLED = "POD-002"
REPORT_READABLE = "POD-007"


@dataclasses.dataclass
class WorkerOutcome:
    """What one worker gave: its report, or ``problem`` (a finding scoped to it) saying why not."""

    worker: str
    report: Report | None = None
    document: dict[str, Any] | None = None
    """The report as read (kept so a merged JSON holds each worker's report as the worker wrote it)."""
    source: str = ""
    sent_at: _dt.datetime | None = None
    """When the fan-out started the worker's command (None when the worker ran it by itself)."""
    received_at: _dt.datetime | None = None
    """When the report arrived (fan-out) or was stored (the object's creation time in GCS)."""
    problem: Finding | None = None


@dataclasses.dataclass(frozen=True)
class SliceView:
    """What a merged view's checks are given (``RunContext.slice``): every worker's outcome in natural
    order, the workers the slice has, and the node, for the fix commands."""

    outcomes: dict[str, WorkerOutcome]
    expected: list[str]
    target: Any


def worker_problem(finding_id: str, title: str, worker: str, status: Status, message: str, *,
                   evidence: dict[str, Any] | None = None, remediation: Remediation | None = None) -> Finding:
    """A finding about one worker that gave no report (it did not answer, or lacks tpudoctor)."""
    return Finding(id=finding_id, step=Step.NODE, title=title, status=status, message=message,
                   severity=Severity.HIGH, evidence=dict(evidence or {}), remediation=remediation,
                   scope=Scope.of(workers=[worker]))
