"""Folding many workers' results into one: each check once per cause, with the workers it holds on.

Pure logic over findings, shared by the merge (the workers' own check results) and the slice checks (a
worker's own trouble, the cross-worker log timeline).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tpudoctor.findings import PROBLEMS, Finding, Report, Scope, Status, worst_status
from tpudoctor.pod.worker_ids import describe_workers, natural_key

MAX_WORKER_MESSAGES = 16


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
        problems = [(w, f) for w, f in pairs if f.status in PROBLEMS]
        causes = list(dict.fromkeys(cause_of(f) for _, f in problems))
        if len(causes) <= 1:
            folded.append(fold_one(pairs, total=len(reports), slice_size=slice_size))
            continue
        by_status: dict[str, list[str]] = {}
        for w, f in pairs:
            by_status.setdefault(f.status.value, []).append(w)
        groups = [[(w, f) for w, f in problems if cause_of(f) == cause] for cause in causes]
        for group in sorted(groups, key=lambda g: timeline_key(*earliest(g))):
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
    from tpudoctor.logs.clock import sort_key

    stamp = result.evidence.get("first_timestamp")
    key = sort_key(stamp) if isinstance(stamp, str) else None
    return (cause_of(result) in consequence_signatures(), key is None, key or "", natural_key(worker))


def earliest(pairs: list[tuple[str, Finding]]) -> tuple[str, Finding]:
    return min(pairs, key=lambda pair: timeline_key(*pair))


def fold_one(pairs: list[tuple[str, Finding]], *, total: int, slice_size: int | None = None) -> Finding:
    status = worst_status(f.status for _, f in pairs)
    named = [(w, f) for w, f in pairs if f.status is status]
    workers = [w for w, _ in named]
    first_worker, first = earliest(named)  # the message is the worker whose failure came first
    where = _where(workers, total, partial=bool(slice_size and slice_size > total))
    if status in PROBLEMS:
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
    if status in PROBLEMS and len(named) > 1:
        evidence["worker_messages"] = {w: f.message for w, f in named[:MAX_WORKER_MESSAGES]}
    scope = Scope.of(workers=workers, hosts=[h for _w, f in named for h in f.scope.hosts],
                     chips=first.scope.chips if len(named) == 1 else ())  # one sort, not one per worker
    remediation = first.remediation
    if remediation is not None and status in PROBLEMS and workers:
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


def worker_problems(outcomes: Mapping[str, Any], finding_id: str) -> list[tuple[str, Finding]]:
    """(worker, problem) for each worker that gave no report for this reason (a problem with this id)."""
    return [(worker, o.problem) for worker, o in outcomes.items()
            if o.problem is not None and o.problem.id == finding_id]
