"""The hang report rule contract: one declarative class per finding a hang report gives of itself (HANG-001..).

Where ``HangRule`` says where one thread stands, a report rule judges the whole report once it is assembled
(the verdict, the root cause and decision, the captures, the Megascale digests) and returns its ``Finding``:
does the job make progress, could the stacks be read, was py-spy there, did the processes stay, did Megascale
report a hang, do all processes run one program. A rule that has nothing to say on a report (py-spy was there)
does not apply and gives no finding. ``examples`` (small reports made by ``example_report``) are its tests.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any, ClassVar

from tpudoctor.check import CHECK_ID_PATTERN
from tpudoctor.findings import Finding, FindingKind, Remediation, Scope, Severity, Status, Target
from tpudoctor.hang.model import CaptureFailure, ProcessCapture, StackSample
from tpudoctor.hang.report import HangReport, ProcessState
from tpudoctor.rule import Example, Rule

RULE_ID_PATTERN = CHECK_ID_PATTERN
"""Like check ids: ``HANG-001``; a third party's own prefix (``ACME-001``)."""
PYSPY_DOCS = "https://github.com/benfred/py-spy"




class HangReportRule(Rule[HangReport]):
    """Base class for every hang report rule. Subclasses set the metadata and implement ``evaluate``."""

    kind: ClassVar[FindingKind] = FindingKind.HANG
    examples: ClassVar[tuple[Example, ...]] = ()


    def finding(self, status: Status, message: str, *, title: str | None = None,
                severity: Severity = Severity.MEDIUM, evidence: dict | None = None,
                remediation: Remediation | None = None, scope: Scope | None = None) -> Finding:
        return Finding(id=self.id, step=None, title=title or self.title, status=status, message=message,
                       severity=severity, evidence=dict(evidence or {}), remediation=remediation,
                       scope=scope or Scope(), kind=FindingKind.HANG)


def scope_of(members: list[tuple[str | None, int]], hosts: list[str]) -> Scope:
    workers = [w for w, _ in members if w is not None]
    return Scope.of(workers=workers, hosts=hosts if not workers else ())


def failures_by_kind(captures: list[ProcessCapture]) -> dict[str, list[ProcessCapture]]:
    by_kind: dict[str, list[ProcessCapture]] = {}
    for capture in captures:
        if capture.failure is not None:
            by_kind.setdefault(capture.failure.kind, []).append(capture)
    return by_kind


_EXAMPLE_TIME = _dt.datetime(2026, 11, 2, 9, 30, tzinfo=_dt.timezone.utc)


def example_capture(pid: int = 4242, *, failure: str | None = None, message: str = "", detail: str = "",
                    worker: str | None = None) -> ProcessCapture:
    """A process capture for examples: stacks taken, or the failure of ``failure``'s kind."""
    if failure is not None:
        return ProcessCapture(pid=pid, cmdline="python3 train.py", host="t1v-n-0", worker=worker,
                              failure=CaptureFailure(kind=failure, message=message or failure, detail=detail))
    sample = StackSample(taken_at=_EXAMPLE_TIME, seconds=0.05, native=False, threads=[])
    return ProcessCapture(pid=pid, cmdline="python3 train.py", host="t1v-n-0", worker=worker, samples=[sample])


def example_state(worker: str | None, pid: int, category: str = "collective") -> ProcessState:
    """A process as the report shows it, for examples."""
    return ProcessState(worker=worker, pid=pid, host=f"t1v-n-{worker or 0}", category=category, rule=None, frame=None,
                        thread="MainThread", detail="", progress="stalled", progress_why="", signature="", stack=[])


def example_report(verdict: str = "progressing", *, why: str = "the step counter moved", confidence: str = "high",
                   captures: list[ProcessCapture] | None = None, **fields: Any) -> HangReport:
    """A hang report for examples: only what the rule reads needs giving."""
    return HangReport(verdict=verdict, verdict_why=why, confidence=confidence, target=Target(), host="t1v-n-0",
                      started_at=_EXAMPLE_TIME, interval_s=10.0, samples=2, processes=fields.pop("processes", []),
                      groups=fields.pop("groups", []), findings=[], captures=list(captures or []), **fields)


def evaluate_rules(report: HangReport, rules: Mapping[str, type[HangReportRule]]) -> list[Finding]:
    """The findings of every report rule (``rules``: ``tpudoctor.families.load_rules("hang-report-rules")``) that
    applies to ``report``, built-ins first in id order (HANG-001 first); a rule whose ``applies`` crashes is
    evaluated, so its crash shows as an ERROR finding."""
    from tpudoctor.rule import evaluate_rule

    return [evaluate_rule(cls, report) for cls in rules.values() if _applies(cls, report)]


def _applies(cls: type[HangReportRule], report: HangReport) -> bool:
    try:
        return bool(cls().applies(report))
    except Exception:  # noqa: BLE001 - evaluate_rule turns the rule's crash into its ERROR finding
        return True


ReportExample = Example
"""The old name of this family's example type, for plugins written against it (construct it positionally)."""
