"""HANG-003: py-spy is installed where tpudoctor runs."""

from __future__ import annotations

from tpudoctor.findings import Finding, Remediation, Severity, Status
from tpudoctor.hang.report import HangReport
from tpudoctor.hang.report_rule import (
    PYSPY_DOCS,
    Example,
    HangReportRule,
    example_capture,
    example_report,
    failures_by_kind,
    scope_of,
)


class PyspyInstalled(HangReportRule):
    """py-spy, which takes the stacks, is installed on every VM that was inspected; without it the verdict rests
    on the logs only. Applies only where it was missing (its absence is otherwise a PASS of HANG-002)."""

    id = "HANG-003"
    title = "py-spy is installed"
    docs = PYSPY_DOCS
    examples = (
        Example("missing", example_report("unknown", captures=[example_capture(failure="pyspy_missing")]),
                      Status.ERROR),
        Example("missing on worker 2 only", example_report("unknown", captures=[
            example_capture(), example_capture(7, failure="pyspy_missing", worker="2")]), Status.ERROR),
    )

    def applies(self, report: HangReport) -> bool:
        return bool(failures_by_kind(report.captures).get("pyspy_missing"))

    def evaluate(self, report: HangReport) -> Finding:
        missing = failures_by_kind(report.captures).get("pyspy_missing", [])
        return self.finding(
            Status.ERROR, "py-spy is not installed where tpudoctor runs: no stack was taken; the verdict rests on the "
                          "logs only", severity=Severity.HIGH, scope=scope_of([(c.worker, c.pid) for c in missing], []),
            remediation=Remediation(text="Install py-spy (it is a tpudoctor dependency; a partial install lacks it).",
                                    commands=("pip install py-spy",)))
