"""HANG-004: the processes stayed up while their stacks were taken."""

from __future__ import annotations

from tpudoctor.findings import Finding, Severity, Status
from tpudoctor.hang.cause import who
from tpudoctor.hang.model import ProcessCapture
from tpudoctor.hang.report import HangReport, ProcessState
from tpudoctor.hang.report_rule import (
    PYSPY_DOCS,
    Example,
    HangReportRule,
    example_capture,
    example_report,
    failures_by_kind,
    scope_of,
)


class ProcessesStayed(HangReportRule):
    """Every process inspected was still there at the end of the capture. One that exited meanwhile (it crashed,
    or finished) is a WARN: its last stack is not where a hung job stands; its log says why it went."""

    id = "HANG-004"
    title = "The processes stayed up while their stacks were taken"
    docs = PYSPY_DOCS
    examples = (
        Example("exited", example_report(captures=[example_capture(
            failure="exited", detail="Error: Failed to get process executable name. Check that the process is "
                                     "running.")]), Status.WARN),
    )

    def applies(self, report: HangReport) -> bool:
        return bool(failures_by_kind(report.captures).get("exited"))

    def evaluate(self, report: HangReport) -> Finding:
        exited = failures_by_kind(report.captures).get("exited", [])
        return self.finding(Status.WARN, f"{who([_as_state(c) for c in exited])} exited while its stacks were taken",
                            severity=Severity.MEDIUM, scope=scope_of([(c.worker, c.pid) for c in exited], []),
                            evidence={"pids": [c.pid for c in exited], "detail": exited[0].failure.detail[-300:]})


def _as_state(capture: ProcessCapture) -> ProcessState:
    return ProcessState(worker=capture.worker, pid=capture.pid, host=capture.host, category="gone", rule=None,
                        frame=None, thread="", detail="", progress="gone", progress_why="", signature="", stack=[])
