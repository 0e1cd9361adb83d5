"""HANG-001: does the job make progress; when it does not, the root cause and what to do."""

from __future__ import annotations

from typing import Any

from tpudoctor.findings import Finding, Remediation, Severity, Status
from tpudoctor.hang.model import Frame
from tpudoctor.hang.report import Decision, HangReport, RootCause
from tpudoctor.hang.report_rule import (
    PYSPY_DOCS,
    Example,
    HangReportRule,
    example_report,
    scope_of,
)

_STUCK_CAUSE = RootCause(category="data", headline="worker 3 is loading data; the others wait for it in a collective",
                         members=[("3", 4242)], hosts=["t1v-n-3"],
                         frame=Frame(function="read_shard", file="input_pipeline.py", line=50), detail="",
                         waiting=3, waiting_workers=["0", "1", "2"], stalled_since=None)
_RESTART = Decision(action="RESTART", confidence="high", why="one worker stuck in its input pipeline",
                    text="restart the job from its last checkpoint", commands=["xpk workload delete ..."])


class JobMakesProgress(HangReportRule):
    """The job's processes move: their step counters or stacks changed between samples. When they do not, the
    finding names the root cause (who is stuck where, who waits for it) and the decision (RESTART,
    REPLACE-HOST, ...) with its commands."""

    id = "HANG-001"
    title = "The job makes progress"
    docs = PYSPY_DOCS
    examples = (
        Example("progressing", example_report("progressing", steps_per_s=2.5), Status.PASS),
        Example("no training process", example_report("no_process", why="no process"), Status.FAIL),
        Example("one snapshot cannot tell", example_report("unknown", why="one dump per process"), Status.WARN),
        Example("hung on one worker's input", example_report("hung", why="no step in 10 minutes",
                                                                   root_cause=_STUCK_CAUSE, decision=_RESTART),
                      Status.FAIL),
    )

    def evaluate(self, report: HangReport) -> Finding:
        if report.verdict == "progressing":
            rate = f" at {report.steps_per_s:.2f} steps/s" if report.steps_per_s else ""
            return self.finding(Status.PASS, f"the job moves{rate}: {report.verdict_why}", severity=Severity.INFO,
                                evidence={"confidence": report.confidence})
        if report.verdict == "no_process":
            return self.finding(
                Status.FAIL, "no training process found on this VM: no process holds a TPU device, and no Python "
                             "process has JAX, torch_xla or TensorFlow loaded", severity=Severity.HIGH,
                remediation=Remediation(text="Run tpudoctor hang where the job runs, or name its processes.",
                                        commands=("ps -ef | grep python", "tpudoctor hang --pid PID")))
        if report.verdict == "unknown":
            return self._unknown(report)
        return self._stuck(report)

    def _unknown(self, report: HangReport) -> Finding:
        cause = report.root_cause
        message = report.verdict_why
        if cause is not None:
            message += f". If it is stuck: {cause.headline}"
        if report.from_stack_dumps:
            remediation = Remediation(
                text="Take a second dump of each process some seconds after the first and give both (a stack that "
                     "did not change is frozen), or run tpudoctor hang on the VM while the job runs.",
                commands=("py-spy dump --pid PID > later/worker-N.txt", "tpudoctor hang --stacks first/ --stacks later/"))
        else:
            remediation = Remediation(
                text="Give the job's log (--log-file) or a longer --interval so its step counter tells.",
                commands=("tpudoctor hang --interval 30s --log-file /path/to/train.log",))
        return self.finding(Status.WARN, message, evidence={"confidence": report.confidence,
                                                            "verdict_why": report.verdict_why},
                            remediation=remediation)

    def _stuck(self, report: HangReport) -> Finding:
        cause, decision = report.root_cause, report.decision
        evidence: dict[str, Any] = {"confidence": report.confidence, "verdict_why": report.verdict_why}
        message = cause.headline if cause else report.verdict_why
        if cause is not None and cause.stalled_since is not None:
            ago = (report.started_at - cause.stalled_since).total_seconds()
            message += f"; no step since {cause.stalled_since.astimezone().strftime('%H:%M:%S')} ({max(ago, 0):.0f}s)"
        if cause is not None:
            evidence.update({"root_cause": cause.category, "detail": cause.detail, "waiting": cause.waiting})
            if cause.frame is not None:
                evidence["frame"] = f"{cause.frame.function} ({cause.frame.where})"
                if cause.frame.code:
                    evidence["code"] = cause.frame.code
            evidence.update(cause.evidence)
        remediation = None
        if decision is not None:
            evidence.update({"decision": decision.action, "decision_confidence": decision.confidence,
                             "decision_why": decision.why})
            remediation = Remediation(text=f"{decision.action}: {decision.text}", commands=tuple(decision.commands),
                                      docs_url=PYSPY_DOCS)
        scope = scope_of(cause.members, cause.hosts) if cause else None
        return self.finding(Status.FAIL, message, title="The job is hung" if report.verdict == "hung" else None,
                            severity=Severity.CRITICAL, evidence=evidence, remediation=remediation, scope=scope)
