"""One report for a whole slice: each worker's results folded by id, with the workers each one holds on.

The fan-out (``check --all-workers``) and ``tpudoctor merge`` both end here: a list of ``WorkerOutcome``
(a worker's own report, or the finding that says why there is none) becomes a ``MergedReport``. The
checks that only a merged view can make (versions that differ, workers missing, clock skew, the
cross-worker log timeline) live in ``tpudoctor.pod.slice_checks``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Iterable
from typing import Any

from tpudoctor.findings import Finding, Remediation, Report, Scope, Status, Target
from tpudoctor.pod.worker_ids import describe_workers, natural_key

_PROBLEMS = (Status.FAIL, Status.ERROR, Status.WARN)
MAX_WORKER_MESSAGES = 16


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


@dataclasses.dataclass
class MergedReport:
    report: Report
    outcomes: dict[str, WorkerOutcome]
    expected: list[str]
    source: str

    @property
    def reported(self) -> list[str]:
        return [w for w, o in self.outcomes.items() if o.report is not None]

    def to_dict(self) -> dict[str, Any]:
        document = self.report.to_dict()
        document["slice"] = {"workers_expected": list(self.expected), "workers_reported": self.reported,
                             "source": self.source}
        document["workers"] = {
            worker: {
                "status": "reported" if o.report is not None else "no_report",
                "source": o.source or None,
                "received_at": o.received_at.isoformat() if o.received_at else None,
                "report": (o.document if o.document is not None else o.report.to_dict()) if o.report else None,
            }
            for worker, o in self.outcomes.items()
        }
        return document


def merge_outcomes(outcomes: Iterable[WorkerOutcome], *, expected: Iterable[str] | None = None,
                   target: Target | None = None, source: str = "") -> MergedReport:
    from tpudoctor import __version__
    from tpudoctor.pod import slice_checks

    by_worker: dict[str, WorkerOutcome] = {}
    for outcome in outcomes:
        if outcome.worker in by_worker:
            from tpudoctor.errors import InputError

            raise InputError(f"two reports for worker {outcome.worker}: {by_worker[outcome.worker].source} and "
                             f"{outcome.source}", hint="merge the reports of one run at a time")
        by_worker[outcome.worker] = outcome
    by_worker = dict(sorted(by_worker.items(), key=lambda kv: natural_key(kv[0])))
    reports = {w: o.report for w, o in by_worker.items() if o.report is not None}
    expected_list = sorted(set(expected or ()), key=natural_key) or slice_checks.expected_workers(reports)
    results = fold_results(reports, slice_size=len(set(expected_list) | set(by_worker)))
    results += slice_checks.slice_findings(by_worker, expected_list, target or Target())
    starts = [r.started_at for r in reports.values()]
    started = min(starts) if starts else _dt.datetime.now(_dt.timezone.utc)
    ends = [r.started_at + _dt.timedelta(seconds=r.duration_s) for r in reports.values()]
    merged = Report(
        results=results,
        target=target or _common_target(reports.values()),
        host=f"{len(reports)} of {len(set(expected_list) | set(by_worker))} workers",
        started_at=started,
        duration_s=max(0.0, (max(ends) - started).total_seconds()) if ends else 0.0,
        tool_version=__version__,
        redacted=any(r.redacted for r in reports.values()),
        environment={"merged_workers": len(reports)},
    )
    return MergedReport(report=merged, outcomes=by_worker, expected=expected_list, source=source)


def fold_results(reports: dict[str, Report], *, slice_size: int | None = None) -> list[Finding]:
    """Each check once per cause: the worst status the workers gave, scoped to the workers that gave it.

    One check with different causes on different workers (worker 3's log an HBM OOM, worker 1's a lost
    connection) is one result per cause, the earliest cause on the cross-worker timeline first, so that
    neither cause is told with the other's workers or fix.
    """
    by_id: dict[str, list[tuple[str, Finding]]] = {}
    for worker, report in reports.items():
        for result in report.results:
            by_id.setdefault(result.id, []).append((worker, result))
    folded: list[Finding] = []
    for pairs in by_id.values():
        problems = [(w, f) for w, f in pairs if f.status in _PROBLEMS]
        causes = list(dict.fromkeys(cause_of(f) for _, f in problems))
        if len(causes) <= 1:
            folded.append(fold_one(pairs, total=len(reports), slice_size=slice_size))
            continue
        by_status: dict[str, list[str]] = {}
        for w, f in pairs:
            by_status.setdefault(f.status.value, []).append(w)
        groups = [[(w, f) for w, f in problems if cause_of(f) == cause] for cause in causes]
        for group in sorted(groups, key=lambda g: timeline_key(*_earliest(g))):
            finding = fold_one(group, total=len(reports), slice_size=slice_size)
            finding.evidence["workers_by_status"] = by_status  # the whole picture, in each cause's result
            folded.append(finding)
    return folded


def consequence_signatures() -> frozenset[str]:
    """Log signatures a slice shows on its healthy workers when one worker dies (``consequence = true`` in
    the catalog): they follow from a cause elsewhere, whatever their time (an HBM OOM traceback carries no
    timestamp; the lost connection does)."""
    from tpudoctor.logdiag.catalog import load_catalog

    return load_catalog().consequences()


def cause_of(result: Finding) -> str | None:
    """What a problem result says went wrong, for folding: a log diagnosis's signature. Other checks have
    one cause each (their workers' messages differ in numbers only: 3 of 4 chips, 2 of 4 chips)."""
    signature = result.evidence.get("signature")
    return signature if isinstance(signature, str) else None


def timeline_key(worker: str, result: Finding) -> tuple:
    """Where a result sits on the cross-worker timeline: causes before their consequences, then by the
    time of the first fatal line (one without a time after every timed one), then by worker."""
    from tpudoctor.logdiag.diagnose import time_key

    stamp = result.evidence.get("first_timestamp")
    key = time_key(stamp) if isinstance(stamp, str) else None
    return (cause_of(result) in consequence_signatures(), key is None, key or "", natural_key(worker))


def _earliest(pairs: list[tuple[str, Finding]]) -> tuple[str, Finding]:
    return min(pairs, key=lambda pair: timeline_key(*pair))


def folded_status(statuses: Iterable[Status]) -> Status:
    """The worst problem if any worker has one; else PASS if any worker passed; else SKIP."""
    seen = set(statuses)
    problems = [s for s in seen if s in _PROBLEMS]
    if problems:
        return max(problems, key=lambda s: s.rank)
    return Status.PASS if Status.PASS in seen else Status.SKIP


def fold_one(pairs: list[tuple[str, Finding]], *, total: int, slice_size: int | None = None) -> Finding:
    status = folded_status(f.status for _, f in pairs)
    named = [(w, f) for w, f in pairs if f.status is status]
    workers = [w for w, _ in named]
    first_worker, first = _earliest(named)  # the message is the worker whose failure came first
    where = _where(workers, total, partial=bool(slice_size and slice_size > total))
    if status in _PROBLEMS:
        message = f"{status.value} on {where}: {first.message}"
        if len(named) > 1 and len({f.message for _, f in named}) > 1:
            message += f" (worker {first_worker}; the others in the evidence)"
    else:
        message = f"{first.message} ({where})"
    by_status: dict[str, list[str]] = {}
    for w, f in pairs:
        by_status.setdefault(f.status.value, []).append(w)
    evidence = dict(first.evidence)
    evidence["workers_by_status"] = by_status
    if status in _PROBLEMS and len(named) > 1:
        evidence["worker_messages"] = {w: f.message for w, f in named[:MAX_WORKER_MESSAGES]}
    scope = Scope.of(workers=workers, hosts=[h for _w, f in named for h in f.scope.hosts],
                     chips=first.scope.chips if len(named) == 1 else ())  # one sort, not one per worker
    remediation = first.remediation
    if remediation is not None and status in _PROBLEMS and workers:
        label = "worker" if len(workers) == 1 else "workers"
        remediation = dataclasses.replace(
            remediation, text=f"On {label} {describe_workers(workers)}: {remediation.text}".rstrip(": "))
    return Finding(
        id=first.id, step=first.step, title=first.title, status=status, message=message,
        severity=max((f.severity for _, f in named), key=lambda s: s.rank),
        evidence=evidence, remediation=remediation,
        skip_reason=first.skip_reason if status is Status.SKIP else None,
        duration_s=max(f.duration_s for _, f in pairs), scope=scope, kind=first.kind,
    )


def _where(workers: list[str], total: int, *, partial: bool = False) -> str:
    """"all 16 workers", "all 15 reporting workers" (one sent no report), "2 of 16 workers (3, 7)"."""
    if len(workers) == total:
        if total == 1:
            return "the only reporting worker" if partial else "the only worker"
        return f"all {total} reporting workers" if partial else f"all {total} workers"
    label = "worker" if total == 1 else "workers"
    if partial:
        label = f"reporting {label}"
    return f"{len(workers)} of {total} {label} ({describe_workers(workers)})"


def _common_target(reports: Iterable[Report]) -> Target:
    """The node the workers agree on; ``worker`` stays empty (the merged report covers them all). A name
    GCP would refuse is no name: it would reach the fix commands (``gcloud ... ssh NAME``)."""
    from tpudoctor.resource_names import RULES

    reports = list(reports)
    fields = {}
    for name in ("project", "zone", "tpu"):
        values = {getattr(r.target, name) for r in reports if getattr(r.target, name)}
        values = {v for v in values if RULES[name][0].match(v)}
        fields[name] = values.pop() if len(values) == 1 else None
    return Target(**fields)


def worker_problem(finding_id: str, title: str, worker: str, status: Status, message: str, *,
                   evidence: dict[str, Any] | None = None, remediation: Remediation | None = None) -> Finding:
    """A finding about one worker that gave no report (it did not answer, or lacks tpudoctor)."""
    from tpudoctor.findings import Severity, Step

    return Finding(id=finding_id, step=Step.NODE, title=title, status=status, message=message,
                   severity=Severity.HIGH, evidence=dict(evidence or {}), remediation=remediation,
                   scope=Scope.of(workers=[worker]))
