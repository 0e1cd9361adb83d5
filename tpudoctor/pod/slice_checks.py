"""Checks that only a merged view can make: workers that did not answer or did not report, versions
that differ between workers, clocks that disagree, and which worker's log failed first.

Each is pure logic over the workers' outcomes and gives one ``Finding`` scoped to the workers it names.
"""

from __future__ import annotations

import shlex
from collections import Counter
from typing import Any

from tpudoctor.findings import Finding, Remediation, Report, Scope, Severity, Status, Step, Target
from tpudoctor.pod.worker_ids import describe_workers, natural_key

WORKER_ANSWERED = "POD-001"
TPUDOCTOR_INSTALLED = "POD-002"
WORKERS_REPORTED = "POD-003"
SAME_VERSIONS = "POD-004"
CLOCKS_AGREE = "POD-005"
LOG_TIMELINE = "POD-006"
REPORT_READABLE = "POD-007"

CLOCK_SKEW_TOLERANCE_S = 2.0
"""Beyond this, log timestamps of different workers cannot be put in one order with confidence."""

# Packages whose versions must agree on every worker of a slice: multi-host programs are compiled on each
# worker and must match, and libtpu versions must agree for the workers to form one slice.
FRAMEWORK_PACKAGES = ("jax", "jaxlib", "libtpu", "libtpu-nightly", "tensorflow", "tensorflow-tpu", "tf-nightly",
                      "torch", "torch-xla", "flax", "keras")


def slice_findings(outcomes: dict[str, Any], expected: list[str], target: Target) -> list[Finding]:
    reports = {w: o.report for w, o in outcomes.items() if o.report is not None}
    findings = _fold_problems(outcomes)
    findings.append(workers_reported(outcomes, expected))
    findings.append(same_versions(reports, target))
    clocks = clocks_agree(outcomes)
    findings.append(clocks)
    skew = clocks.evidence.get("offset_lower_bound_s") or {}
    findings.append(log_timeline(reports, max_skew_s=max((abs(v) for v in skew.values()), default=0.0)))
    return findings


def expected_workers(reports: dict[str, Report]) -> list[str]:
    """The slice's workers as the reports themselves know it (metadata server or GKE), else those present."""
    sizes = [r.environment.get("slice_workers") for r in reports.values()]
    size = max((s for s in sizes if isinstance(s, int) and s > 0), default=0)
    if size and all(w.isdigit() for w in reports):
        return [str(i) for i in range(max(size, max((int(w) + 1 for w in reports), default=0)))]
    return sorted(reports, key=natural_key)


def _fold_problems(outcomes: dict[str, Any]) -> list[Finding]:
    """Workers that gave no report: one finding per kind of trouble, naming the workers."""
    from tpudoctor.pod.merge import fold_one

    by_id: dict[str, list[tuple[str, Finding]]] = {}
    for worker, outcome in outcomes.items():
        if outcome.problem is not None:
            by_id.setdefault(outcome.problem.id, []).append((worker, outcome.problem))
    findings = [fold_one(pairs, total=len(outcomes)) for pairs in by_id.values()]
    fanned_out = any(o.sent_at is not None for o in outcomes.values())
    if fanned_out and WORKER_ANSWERED not in by_id:
        findings.append(Finding(
            id=WORKER_ANSWERED, step=Step.NODE, title="Every worker answered", status=Status.PASS,
            message=f"all {len(outcomes)} workers answered over gcloud ssh", severity=Severity.INFO))
    return findings


def workers_reported(outcomes: dict[str, Any], expected: list[str]) -> Finding:
    title = "Every worker of the slice has a report"
    base = dict(id=WORKERS_REPORTED, step=Step.NODE, title=title)
    present = set(outcomes)
    missing = [w for w in expected if w not in present]
    extra = sorted(present - set(expected), key=natural_key) if expected else []
    evidence = {"workers_expected": expected, "workers_present": sorted(present, key=natural_key)}
    if not expected:
        return Finding(**base, status=Status.SKIP, message="the slice's size is unknown",
                       severity=Severity.INFO, skip_reason="the slice's size is unknown", evidence=evidence)
    if missing:
        return Finding(
            **base, status=Status.FAIL, severity=Severity.HIGH, evidence=evidence | {"missing": missing},
            message=f"{len(missing)} of {len(expected)} workers have no report ({describe_workers(missing)})",
            scope=Scope.of(workers=missing),
            remediation=Remediation(
                text="A worker without a report either never ran tpudoctor (its startup script or pod did not "
                     "start) or could not write the report. Look at that worker first: a worker that is down "
                     "stops the whole slice.",
                commands=("kubectl get pods -l jobset.sigs.k8s.io/jobset-name -o wide",)
                if not any(o.report and o.report.target.tpu for o in outcomes.values()) else ()),
        )
    message = f"all {len(expected)} workers reported"
    if extra:
        message += f" (and {describe_workers(extra)}, outside the expected list)"
    return Finding(**base, status=Status.PASS, severity=Severity.INFO, message=message, evidence=evidence)


def _versions(report: Report) -> dict[str, str]:
    """Versions a worker recorded: its environment, else the frameworks RUNTIME-002 listed (older reports)."""
    env = report.environment or {}
    found: dict[str, str] = {}
    packages = env.get("packages")
    if not isinstance(packages, dict):
        packages = next((r.evidence.get("frameworks") for r in report.results
                         if r.id == "RUNTIME-002" and isinstance(r.evidence.get("frameworks"), dict)), None) or {}
    for name in FRAMEWORK_PACKAGES:
        if name in packages:
            found[name] = str(packages[name])
    if report.tool_version:
        found["tpudoctor"] = report.tool_version
    if env.get("python"):
        found["python"] = str(env["python"])
    if env.get("runtime_version"):
        found["runtime image"] = str(env["runtime_version"])
    return found


def same_versions(reports: dict[str, Report], target: Target) -> Finding:
    base = dict(id=SAME_VERSIONS, step=Step.RUNTIME, title="Every worker runs the same framework versions")
    if len(reports) < 2:
        reason = "fewer than two worker reports to compare"
        return Finding(**base, status=Status.SKIP, message=reason, skip_reason=reason, severity=Severity.INFO)
    per_worker = {w: _versions(r) for w, r in reports.items()}
    names = sorted({name for v in per_worker.values() for name in v})
    differing: dict[str, dict[str, list[str]]] = {}
    odd: set[str] = set()
    fixes: list[str] = []
    lines: list[str] = []
    for name in names:
        values = {w: v.get(name, "not installed") for w, v in per_worker.items()}
        counts = Counter(values.values())
        if len(counts) < 2:
            continue
        majority = counts.most_common(1)[0][0]
        groups: dict[str, list[str]] = {}
        for w, value in values.items():
            groups.setdefault(value, []).append(w)
        differing[name] = groups
        minority = [w for w, value in values.items() if value != majority]
        odd.update(minority)
        lines.append(f"{name} {majority} on {counts[majority]} of {len(values)} workers, "
                     + "; ".join(f"{value} on {describe_workers(ws)}" for value, ws in groups.items()
                                 if value != majority))
        if name in FRAMEWORK_PACKAGES:
            pip = f"pip uninstall -y {name}" if majority == "not installed" else f"pip install {name}=={majority}"
            fixes.append(_on_workers(target, minority, pip))
    evidence: dict[str, Any] = {"versions_by_worker": per_worker if len(per_worker) <= 16 else None,
                                "differing": differing}
    if not differing:
        shown = ", ".join(f"{k} {v}" for k, v in next(iter(per_worker.values())).items())
        return Finding(**base, status=Status.PASS, severity=Severity.INFO, evidence={"versions": shown},
                       message=f"all {len(reports)} workers run {shown or 'the same (no versions recorded)'}")
    frameworks = [n for n in differing if n in FRAMEWORK_PACKAGES]
    status = Status.FAIL if frameworks else Status.WARN
    return Finding(
        **base, status=status, severity=Severity.HIGH if frameworks else Severity.LOW, evidence=evidence,
        message=f"versions differ across workers: {'; '.join(lines)}", scope=Scope.of(workers=sorted(odd)),
        remediation=Remediation(
            text="Every worker of a slice must run the same framework and libtpu versions, or the workers compile "
                 "different programs and the job hangs or fails at start-up. Install the majority's version on "
                 "the odd workers (or rebuild them from one image)." if frameworks else
                 "Install the same tpudoctor and Python on every worker, so their reports compare like for like.",
            commands=tuple(fixes)),
    )


def _on_workers(target: Target, workers: list[str], command: str) -> str:
    if not target.tpu:
        return command
    ssh = ["gcloud", "compute", "tpus", "tpu-vm", "ssh", target.tpu, "--zone", target.zone or "ZONE"]
    if target.project:
        ssh += ["--project", target.project]
    ssh += [f"--worker={','.join(sorted(workers, key=natural_key))}", "--command", command]
    return shlex.join(ssh)


def clocks_agree(outcomes: dict[str, Any]) -> Finding:
    """A worker's run must lie inside the time the fan-out waited for it (or before its report was stored).

    With ``sent`` and ``received`` on the collector's clock, a worker clock offset ``d`` must satisfy
    ``sent <= started - d`` and ``finished - d <= received``; an offset outside that interval is certain.
    """
    base = dict(id=CLOCKS_AGREE, step=Step.NODE, title="Worker clocks agree")
    offsets: dict[str, float] = {}
    judged = 0
    for worker, outcome in outcomes.items():
        report = outcome.report
        if report is None or outcome.received_at is None:
            continue
        judged += 1
        started = report.started_at
        finished = started.timestamp() + report.duration_s
        ahead_by = finished - outcome.received_at.timestamp()
        behind_by = (outcome.sent_at.timestamp() - started.timestamp()) if outcome.sent_at else float("-inf")
        if ahead_by > CLOCK_SKEW_TOLERANCE_S:
            offsets[worker] = round(ahead_by, 3)
        elif behind_by > CLOCK_SKEW_TOLERANCE_S:
            offsets[worker] = -round(behind_by, 3)
    if not judged:
        reason = "no report came with a receive time (reports read from local files)"
        return Finding(**base, status=Status.SKIP, message=reason, skip_reason=reason, severity=Severity.INFO)
    if not offsets:
        return Finding(**base, status=Status.PASS, severity=Severity.INFO,
                       message=f"the clocks of {judged} worker(s) agree with this machine's within "
                               f"{CLOCK_SKEW_TOLERANCE_S:g}s", evidence={"workers_judged": judged})
    shown = ", ".join(f"worker {w} {'ahead' if s > 0 else 'behind'} by at least {abs(s):.1f}s"
                      for w, s in sorted(offsets.items(), key=lambda kv: natural_key(kv[0]))[:12])
    return Finding(
        **base, status=Status.WARN, severity=Severity.MEDIUM, scope=Scope.of(workers=list(offsets)),
        message=f"clock skew: {shown}; log times of different workers cannot be compared exactly",
        evidence={"offset_lower_bound_s": offsets, "tolerance_s": CLOCK_SKEW_TOLERANCE_S, "workers_judged": judged},
        remediation=Remediation(
            text="Let chrony sync the clock to the metadata server's NTP (metadata.google.internal) on these "
                 "workers; then compare their logs again.",
            commands=("sudo systemctl restart chrony", "chronyc tracking")),
    )


def log_timeline(reports: dict[str, Report], *, max_skew_s: float = 0.0) -> Finding:
    """Which worker's log shows the failure the others follow from: a cause before its consequences (the
    lost connections a slice shows when one worker dies), then the first in time."""
    from tpudoctor.pod.merge import consequence_signatures, timeline_key

    base = dict(id=LOG_TIMELINE, step=Step.LOGS, title="The first fatal log event across workers")
    events: list[tuple[tuple, str, Finding]] = []
    looked = 0
    for worker, report in reports.items():
        logs = [r for r in report.results if r.step is Step.LOGS and r.id.startswith("LOGS-")]
        looked += bool([r for r in logs if r.status is not Status.SKIP])
        events += [(timeline_key(worker, r), worker, r) for r in logs
                   if r.status is Status.FAIL and isinstance(r.evidence.get("signature"), str)]
    timed = [e for e in events if isinstance(e[2].evidence.get("first_timestamp"), str) and not e[0][1]]
    causes = [e for e in events if e[2].evidence.get("signature") not in consequence_signatures()]
    if not timed and not causes:  # nothing to order by: neither a time nor a cause among consequences
        if not looked:
            reason = "no worker read any log (LOGS steps skipped or not run)"
            return Finding(**base, status=Status.SKIP, message=reason, skip_reason=reason, severity=Severity.INFO)
        return Finding(**base, status=Status.PASS, severity=Severity.INFO,
                       message=f"no timed fatal log event on any of {looked} worker(s) that read logs")
    events.sort(key=lambda e: e[0])
    first_per_worker: dict[str, tuple[tuple, str, Finding]] = {}
    for event in events:
        first_per_worker.setdefault(event[1], event)
    timeline = list(first_per_worker.values())
    _key, worker, cause = timeline[0]
    followers = [w for _k, w, _r in timeline[1:]]
    stamp = cause.evidence.get("first_timestamp")
    if isinstance(stamp, str) and not _key[1]:
        message = f"worker {worker} logged the first fatal event at {stamp} ({cause.id}: {cause.message})"
    else:
        message = (f"worker {worker} logged the fatal event the others follow from ({cause.id}: {cause.message}; "
                   "its line has no time)")
    times = [k[2] for k, _w, _r in timeline]
    in_time = not any(k[1] for k, _w, _r in timeline) and times == sorted(times)  # the cause also came first
    if followers:
        message += (f"; {len(followers)} other worker(s) failed after it ({describe_workers(followers)}), which "
                    "follows from it" if in_time else
                    f"; {len(followers)} other worker(s) show what follows when a worker dies "
                    f"({describe_workers(followers)})")
    if max_skew_s and len(timeline) > 1:
        message += (f" (the worker clocks disagree by at least {max_skew_s:.1f}s: events closer than that may "
                    "be in another order)")
    fix = cause.remediation
    text = (f"Start with worker {worker}: the errors on the other workers (lost connections, "
            "'Socket closed') are what a slice shows when one worker dies.")
    return Finding(
        **base, status=Status.FAIL, severity=Severity.CRITICAL, message=message,
        scope=Scope.of(workers=[worker]),
        evidence={"root_cause_worker": worker, "signature": cause.evidence.get("signature"),
                  "timeline": [{"worker": w, "timestamp": r.evidence.get("first_timestamp"), "check": r.id,
                                "signature": r.evidence.get("signature")} for _k, w, r in timeline[:64]]},
        remediation=Remediation(text=f"{text} {fix.text}" if fix and fix.text else text,
                                commands=fix.commands if fix else (), docs_url=fix.docs_url if fix else None),
    )
