"""HANG-006: every process of a multi-process job runs the same program (and waits at the same line)."""

from __future__ import annotations

from tpudoctor.findings import Finding, Scope, Severity, Status
from tpudoctor.hang.report import HangReport, RootCause, StackGroup
from tpudoctor.hang.report_rule import (
    Example,
    HangReportRule,
    example_report,
    example_state,
    scope_of,
)
from tpudoctor.hang.rule import Category

_TWO = [example_state("0", 10), example_state("1", 11)]


def _group(signature: str, members: list[tuple[str | None, int]]) -> StackGroup:
    return StackGroup(category="collective", signature=signature, members=members, stack=[], thread="MainThread")


_INCONSISTENT = RootCause(category="inconsistent_program", headline="worker 1 compiled a different program",
                          members=[("1", 11)], hosts=["t1v-n-1"], frame=None, detail="", waiting=1,
                          waiting_workers=["0"], stalled_since=None)


class SameProgram(HangReportRule):
    """In SPMD every process runs one program: processes waiting at different lines, a different compiled module
    or a fingerprint mismatch in a Megascale digest, is a job that cannot meet in its collectives. Applies to
    jobs of more than one process."""

    id = "HANG-006"
    title = "Every process runs the same program"
    docs = "https://docs.jax.dev/en/latest/multi_process.html"
    examples = (
        Example("one line", example_report("hung", processes=_TWO, groups=[
            _group("train.py:88 all_reduce", [("0", 10), ("1", 11)])]), Status.PASS),
        Example("two lines", example_report("hung", processes=_TWO, groups=[
            _group("train.py:88 all_reduce", [("0", 10)]), _group("eval.py:12 all_gather", [("1", 11)])]),
                      Status.WARN),
        Example("a different program", example_report("hung", processes=_TWO, root_cause=_INCONSISTENT),
                      Status.FAIL),
    )

    def applies(self, report: HangReport) -> bool:
        return len(report.processes) > 1

    def evaluate(self, report: HangReport) -> Finding:
        cause = report.root_cause
        digests = [d for d in report.digests if d.cause in ("inconsistent_program", "different_module",
                                                            "fingerprint_mismatch")]
        if cause is not None and cause.category == "inconsistent_program":
            return self.finding(Status.FAIL, cause.headline, severity=Severity.HIGH,
                                scope=scope_of(cause.members, cause.hosts), evidence=cause.evidence)
        if digests:
            return self.finding(Status.FAIL, f"Megascale: {digests[-1].cause}: {digests[-1].headline}",
                                severity=Severity.HIGH, scope=Scope.of(hosts=digests[-1].culprit_hosts))
        waiting = {g.signature for g in report.groups if Category(g.category).waits_for_others}
        if len(waiting) <= 1:
            return self.finding(Status.PASS, "the waiting processes stand at the same line", severity=Severity.INFO)
        return self.finding(Status.WARN, f"the waiting processes stand at {len(waiting)} different places",
                            evidence={"signatures": sorted(waiting)[:4]})
