from __future__ import annotations

from typing import Any

from tpudoctor.check import Example
from tpudoctor.checks.slice._base import OUTCOMES, _SliceCheck
from tpudoctor.checks.slice._examples import fanned_out, log_failure, logs_read, worker_report
from tpudoctor.checks.slice.clocks_agree import clock_offsets
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Finding, Remediation, Scope, Severity, Status, Step
from tpudoctor.pod.folding import consequence_signatures, timeline_key
from tpudoctor.pod.worker_ids import describe_workers

_OOM = log_failure("hbm-oom", "HBM out of memory: 17.2G of 16.0G", "2026-05-01 10:00:05")
_SOCKET = log_failure("socket-closed", "the connection to a peer closed", "2026-05-01 10:00:09")


class LogTimeline(_SliceCheck):
    """Which worker's log shows the failure the others follow from: a cause before its consequences (the
    lost connections a slice shows when one worker dies), then the first in time; the worker clocks' skew
    is quoted where it could reorder events."""

    id = "POD-006"
    title = "The first fatal log event across workers"
    step = Step.LOGS
    severity = Severity.CRITICAL
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/troubleshooting"
    examples = (
        Example("no fatal event", fanned_out(worker_report("0", results=(logs_read(),)),
                                             worker_report("1", results=(logs_read(),))), Status.PASS),
        Example("worker 1 ran out of HBM, worker 0 lost it", fanned_out(
            worker_report("0", results=(_SOCKET,)), worker_report("1", results=(_OOM,))), Status.FAIL),
        Example("no logs read", fanned_out(worker_report("0"), worker_report("1")), Status.SKIP),
        Example("only worker 1 failed: LOGS-001 is the finding, not a second one", fanned_out(
            worker_report("0", results=(logs_read(),)), worker_report("1", results=(_OOM,))), Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        outcomes: dict[str, Any] = facts.require(OUTCOMES)
        reports = {w: o.report for w, o in outcomes.items() if o.report is not None}
        offsets, _judged = clock_offsets(outcomes)
        max_skew_s = max((abs(v) for v in offsets.values()), default=0.0)
        base = dict(id=self.id, step=self.step, title=self.title)
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
        if len(timeline) == 1:  # one worker failed: its own log finding says it all, and counts once
            reason = (f"only worker {worker} logged a fatal event ({cause.id}: {cause.message}), so there is no "
                      f"order across workers to find; {cause.id} is the finding")
            return Finding(**base, status=Status.SKIP, message=reason, skip_reason=reason, severity=Severity.INFO,
                           scope=Scope.of(workers=[worker]), evidence={"root_cause_worker": worker})
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
