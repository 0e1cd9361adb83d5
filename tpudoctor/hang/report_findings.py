"""The report's own findings (HANG-001..006): progress, readable stacks, py-spy, processes that stayed, a
Megascale digest, one program."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tpudoctor.findings import Finding, FindingKind, Remediation, Scope, Severity, Status
from tpudoctor.hang.cause import who
from tpudoctor.hang.model import ProcessCapture
from tpudoctor.hang.report import HangReport, ProcessState
from tpudoctor.hang.rule import Category, HangRule

PROGRESS = "HANG-001"
STACKS_READABLE = "HANG-002"
PYSPY_INSTALLED = "HANG-003"
PROCESSES_STAYED = "HANG-004"
MEGASCALE_DIGEST = "HANG-005"
SAME_PROGRAM = "HANG-006"
DOCS = "https://github.com/benfred/py-spy"


def findings(report: HangReport, captures: list[ProcessCapture], worker_problems: list[Finding]) -> list[Finding]:
    found = [_progress_finding(report)]
    found += _capture_findings(captures, report)
    found.append(_digest_finding(report))
    if len(report.processes) > 1:
        found.append(_program_finding(report))
    return found + worker_problems


def plugin_problem_findings(rules: Iterable[type[HangRule]]) -> list[Finding]:
    """An ERROR finding for each hang rule plugin that could not be loaded, naming it."""
    from tpudoctor.plugins import plugin_problem_of

    return [problem.finding(rule.id, FindingKind.HANG) for rule in rules
            if (problem := plugin_problem_of(rule)) is not None]


def _finding(fid: str, title: str, status: Status, message: str, *, severity: Severity = Severity.MEDIUM,
             evidence: dict | None = None, remediation: Remediation | None = None, scope: Scope | None = None,
             skip_reason: str | None = None) -> Finding:
    return Finding(id=fid, step=None, title=title, status=status, message=message, severity=severity,
                   evidence=dict(evidence or {}), remediation=remediation, scope=scope or Scope(),
                   skip_reason=skip_reason, kind=FindingKind.HANG)


def _scope_of(members: list[tuple[str | None, int]], hosts: list[str]) -> Scope:
    workers = [w for w, _ in members if w is not None]
    return Scope.of(workers=workers, hosts=hosts if not workers else ())


def _progress_finding(report: HangReport) -> Finding:
    title = "The job makes progress"
    if report.verdict == "progressing":
        rate = f" at {report.steps_per_s:.2f} steps/s" if report.steps_per_s else ""
        return _finding(PROGRESS, title, Status.PASS, f"the job moves{rate}: {report.verdict_why}",
                        severity=Severity.INFO, evidence={"confidence": report.confidence})
    if report.verdict == "no_process":
        return _finding(PROGRESS, title, Status.FAIL,
                        "no training process found on this VM: no process holds a TPU device, and no Python process "
                        "has JAX, torch_xla or TensorFlow loaded", severity=Severity.HIGH,
                        remediation=Remediation(text="Run tpudoctor hang where the job runs, or name its processes.",
                                                commands=("ps -ef | grep python", "tpudoctor hang --pid PID")))
    cause, decision = report.root_cause, report.decision
    evidence: dict[str, Any] = {"confidence": report.confidence, "verdict_why": report.verdict_why}
    if report.verdict == "unknown":
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
        return _finding(PROGRESS, title, Status.WARN, message, evidence=evidence, remediation=remediation)
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
                                  docs_url=DOCS)
    scope = _scope_of(cause.members, cause.hosts) if cause else Scope()
    return _finding(PROGRESS, "The job is hung" if report.verdict == "hung" else title, Status.FAIL, message,
                    severity=Severity.CRITICAL, evidence=evidence, remediation=remediation, scope=scope)


def _capture_findings(captures: list[ProcessCapture], report: HangReport) -> list[Finding]:
    by_kind: dict[str, list[ProcessCapture]] = {}
    for capture in captures:
        if capture.failure is not None:
            by_kind.setdefault(capture.failure.kind, []).append(capture)
    found = []
    traced = [c for c in captures if c.samples]
    denied = by_kind.get("ptrace_denied", []) + by_kind.get("not_python", []) + by_kind.get("timeout", []) + \
        by_kind.get("error", [])
    if denied:
        first = denied[0]
        found.append(_finding(
            STACKS_READABLE, "The processes' stacks can be read", Status.ERROR,
            f"{first.failure.message}" + (f" (and {len(denied) - 1} more)" if len(denied) > 1 else "")
            + f": {first.failure.detail.splitlines()[-1] if first.failure.detail else ''}".rstrip(": "),
            severity=Severity.HIGH, scope=_scope_of([(c.worker, c.pid) for c in denied], []),
            evidence={"pids": [c.pid for c in denied], "kinds": sorted({c.failure.kind for c in denied})},
            remediation=_ptrace_fix(report) if "ptrace_denied" in by_kind else Remediation(
                text="Run py-spy on the process by hand and read its error.",
                commands=(f"py-spy dump --pid {first.pid}",))))
    elif captures and not by_kind.get("pyspy_missing"):
        threads = sum(len(c.samples[-1].threads) for c in traced)
        found.append(_finding(STACKS_READABLE, "The processes' stacks can be read", Status.PASS,
                              f"stacks of {len(traced)} process(es), {threads} thread(s)", severity=Severity.INFO))
    missing = by_kind.get("pyspy_missing", [])
    if missing:
        found.append(_finding(
            PYSPY_INSTALLED, "py-spy is installed", Status.ERROR,
            "py-spy is not installed where tpudoctor runs: no stack was taken; the verdict rests on the logs only",
            severity=Severity.HIGH, scope=_scope_of([(c.worker, c.pid) for c in missing], []),
            remediation=Remediation(text="Install py-spy (it is a tpudoctor dependency; a partial install lacks it).",
                                    commands=("pip install py-spy",))))
    exited = by_kind.get("exited", [])
    if exited:
        found.append(_finding(
            PROCESSES_STAYED, "The processes stayed up while their stacks were taken", Status.WARN,
            f"{who([_as_state(c) for c in exited])} exited while its stacks were taken",
            scope=_scope_of([(c.worker, c.pid) for c in exited], []),
            evidence={"pids": [c.pid for c in exited], "detail": exited[0].failure.detail[-300:]}))
    return found


def _as_state(capture: ProcessCapture) -> ProcessState:
    return ProcessState(worker=capture.worker, pid=capture.pid, host=capture.host, category="gone", rule=None,
                        frame=None, thread="", detail="", progress="gone", progress_why="", signature="", stack=[])


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
                       commands=tuple(commands), docs_url="https://github.com/benfred/py-spy#when-do-you-need-to-run-as-sudo")


def _digest_finding(report: HangReport) -> Finding:
    title = "No Megascale hang digest in the logs"
    digests = [d for d in report.digests if d.kind in ("digest", "unrecoverable")]
    timeouts = [d for d in report.digests if d.kind == "timed_out"]
    if not digests and not timeouts:
        sources = report.environment.get("log_sources") or []
        return _finding(MEGASCALE_DIGEST, title, Status.PASS,
                        f"none in {len(sources)} log source(s)" if sources else "no log was read",
                        severity=Severity.INFO, evidence={"sources": sources[:20]})
    if not digests:
        last = timeouts[-1]
        return _finding(MEGASCALE_DIGEST, "Megascale reported a hang", Status.FAIL,
                        f"{last.headline} ({last.source}:{last.line_no}); the coordinator's digest (worker 0 of slice "
                        "0) says why", severity=Severity.HIGH, evidence={"timed_out": [d.to_dict() for d in timeouts[-3:]]})
    last = digests[-1]
    hosts = last.culprit_hosts or last.nonzero_pc_hosts
    message = f"Megascale: {last.cause or 'cause unknown'}" + (f"; culprit hosts {', '.join(hosts)}" if hosts else "")
    message += f" ({last.source}:{last.line_no})"
    return _finding(MEGASCALE_DIGEST, "Megascale reported a hang", Status.FAIL, message, severity=Severity.HIGH,
                    evidence={"digest": {k: v for k, v in last.to_dict().items() if k != "text"},
                              "count": len(digests)},
                    scope=Scope.of(hosts=hosts))


def _program_finding(report: HangReport) -> Finding:
    title = "Every process runs the same program"
    cause = report.root_cause
    digests = [d for d in report.digests if d.cause in ("inconsistent_program", "different_module",
                                                        "fingerprint_mismatch")]
    if cause is not None and cause.category == "inconsistent_program":
        return _finding(SAME_PROGRAM, title, Status.FAIL, cause.headline, severity=Severity.HIGH,
                        scope=_scope_of(cause.members, cause.hosts), evidence=cause.evidence)
    if digests:
        return _finding(SAME_PROGRAM, title, Status.FAIL, f"Megascale: {digests[-1].cause}: {digests[-1].headline}",
                        severity=Severity.HIGH, scope=Scope.of(hosts=digests[-1].culprit_hosts))
    waiting = {g.signature for g in report.groups if Category(g.category).waits_for_others}
    if len(waiting) <= 1:
        return _finding(SAME_PROGRAM, title, Status.PASS, "the waiting processes stand at the same line",
                        severity=Severity.INFO)
    return _finding(SAME_PROGRAM, title, Status.WARN, f"the waiting processes stand at {len(waiting)} different places",
                    evidence={"signatures": sorted(waiting)[:4]})
