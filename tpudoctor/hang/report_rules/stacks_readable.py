"""HANG-002: the processes' stacks could be read (py-spy was allowed to trace them)."""

from __future__ import annotations

from tpudoctor.findings import Finding, Remediation, Severity, Status
from tpudoctor.hang.report import HangReport
from tpudoctor.hang.report_rule import (
    Example,
    HangReportRule,
    example_capture,
    example_report,
    failures_by_kind,
    scope_of,
)

UNREADABLE = ("ptrace_denied", "not_python", "timeout", "error")
"""The capture failures that leave a process's stacks unread (py-spy missing is HANG-003's)."""


class StacksReadable(HangReportRule):
    """py-spy could read every process's stacks. Denied (ptrace: not root, ``kernel.yama.ptrace_scope``, a
    container without ``SYS_PTRACE``), not Python, timed out or failed: an ERROR with the fix for the cause."""

    id = "HANG-002"
    title = "The processes' stacks can be read"
    docs = "https://github.com/benfred/py-spy#when-do-you-need-to-run-as-sudo"
    examples = (
        Example("read", example_report(captures=[example_capture()]), Status.PASS),
        Example("ptrace denied", example_report(captures=[example_capture(
            failure="ptrace_denied", message="py-spy was not allowed to trace process 4242",
            detail="Permission Denied: Try running again with elevated permissions by going 'sudo env \"PATH=$PATH\" "
                   "!!'")], environment={"ptrace_scope": 1}), Status.ERROR),
    )

    def applies(self, report: HangReport) -> bool:
        by_kind = failures_by_kind(report.captures)
        return any(by_kind.get(k) for k in UNREADABLE) or bool(report.captures and not by_kind.get("pyspy_missing"))

    def evaluate(self, report: HangReport) -> Finding:
        by_kind = failures_by_kind(report.captures)
        denied = [c for kind in UNREADABLE for c in by_kind.get(kind, [])]
        if not denied:
            traced = [c for c in report.captures if c.samples]
            threads = sum(len(c.samples[-1].threads) for c in traced)
            return self.finding(Status.PASS, f"stacks of {len(traced)} process(es), {threads} thread(s)",
                                severity=Severity.INFO)
        first = denied[0]
        message = f"{first.failure.message}" + (f" (and {len(denied) - 1} more)" if len(denied) > 1 else "") \
            + f": {first.failure.detail.splitlines()[-1] if first.failure.detail else ''}".rstrip(": ")
        remediation = _ptrace_fix(report) if "ptrace_denied" in by_kind else Remediation(
            text="Run py-spy on the process by hand and read its error.", commands=(f"py-spy dump --pid {first.pid}",))
        return self.finding(Status.ERROR, message, severity=Severity.HIGH,
                            scope=scope_of([(c.worker, c.pid) for c in denied], []),
                            evidence={"pids": [c.pid for c in denied], "kinds": sorted({c.failure.kind for c in denied})},
                            remediation=remediation)


def _ptrace_fix(report: HangReport) -> Remediation:
    scope = report.environment.get("ptrace_scope")
    commands = ['sudo env "PATH=$PATH" tpudoctor hang']
    if scope not in (None, 0):
        commands.append("sudo sysctl kernel.yama.ptrace_scope=0  # or run as root; scope now "
                        f"{scope}")
    commands.append("# GKE / Docker: add the capability to the container that runs tpudoctor: "
                    "securityContext: {capabilities: {add: [SYS_PTRACE]}}  (docker run --cap-add SYS_PTRACE)")
    return Remediation(text="py-spy needs the right to trace the job's processes: run tpudoctor as root (or as the "
                            "job's user with kernel.yama.ptrace_scope=0), and in a container grant CAP_SYS_PTRACE.",
                       commands=tuple(commands), docs_url=StacksReadable.docs)
