"""One report for a whole slice: each worker's results folded by id, with the workers each one holds on.

The fan-out (``check --all-workers``) and ``tpudoctor merge`` both end here: a list of ``WorkerOutcome``
(a worker's own report, or the finding that says why there is none) becomes a ``MergedReport``. What only
a merged view can tell (workers missing, versions that differ, clock skew, the cross-worker log timeline)
is said by the slice checks, registered checks run by the engine on the outcomes as facts.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Collection, Iterable
from typing import Any

from tpudoctor.findings import Finding, Report, Target
from tpudoctor.pod.folding import fold_results
from tpudoctor.pod.outcomes import SliceView, WorkerOutcome
from tpudoctor.pod.worker_ids import natural_key

__all__ = ["MergedReport", "WorkerOutcome", "expected_workers", "merge_outcomes", "slice_results"]


@dataclasses.dataclass
class MergedReport:
    report: Report
    outcomes: dict[str, WorkerOutcome]
    expected: list[str]
    source: str
    skipped: list[str] = dataclasses.field(default_factory=list)
    """Sources left out, and why (a report of another kind is no worker's)."""
    note: str | None = None
    """Lines for standard error after the report (the sources left out)."""

    @property
    def results(self) -> list[Any]:
        """What the exit status is judged on: the merged results."""
        return self.report.results

    @property
    def reported(self) -> list[str]:
        return [w for w, o in self.outcomes.items() if o.report is not None]

    def to_dict(self) -> dict[str, Any]:
        document = self.report.to_dict()
        document["slice"] = {"workers_expected": list(self.expected), "workers_reported": self.reported,
                             "source": self.source}
        if self.skipped:
            document["slice"]["left_out"] = list(self.skipped)
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
                   target: Target | None = None, source: str = "", registry: Any = None,
                   skipped: Iterable[str] = ()) -> MergedReport:
    """``registry``: where the slice checks come from (default: the one ``tpudoctor check`` loads)."""
    from tpudoctor import __version__

    by_worker: dict[str, WorkerOutcome] = {}
    for outcome in outcomes:
        if outcome.worker in by_worker:
            from tpudoctor.errors import InputError

            raise InputError(f"two reports for worker {outcome.worker}: {by_worker[outcome.worker].source} and "
                             f"{outcome.source}", hint="merge the reports of one run at a time")
        by_worker[outcome.worker] = outcome
    by_worker = dict(sorted(by_worker.items(), key=lambda kv: natural_key(kv[0])))
    reports = {w: o.report for w, o in by_worker.items() if o.report is not None}
    expected_list = sorted(set(expected or ()), key=natural_key) or expected_workers(reports)
    results = fold_results(reports, slice_size=len(set(expected_list) | set(by_worker)))
    results += slice_results(SliceView(by_worker, expected_list, target or Target()), registry)
    starts = [r.started_at for r in reports.values()]
    started = min(starts) if starts else _dt.datetime.now(_dt.timezone.utc)
    ends = [r.started_at + _dt.timedelta(seconds=r.duration_s) for r in reports.values()]
    outside = [w for w in reports if w not in set(expected_list)]
    host = f"{len(reports) - len(outside)} of {len(expected_list)} workers" + (
        f", and {len(outside)} outside the expected workers" if outside else "")
    merged = Report(
        results=results,
        target=target or _common_target(reports.values()),
        host=host,
        started_at=started,
        duration_s=max(0.0, (max(ends) - started).total_seconds()) if ends else 0.0,
        tool_version=__version__,
        redacted=any(r.redacted for r in reports.values()),
        environment={"merged_workers": len(reports)},
    )
    return MergedReport(report=merged, outcomes=by_worker, expected=expected_list, source=source,
                        skipped=list(skipped))


# What a merge runs: the slice checks and the providers of their facts (importing every worker check and
# provider, with their client libraries, cost a merge about 0.5 s). Plugins are loaded as for a check run.
SLICE_BUILTINS = ("tpudoctor.checks.slice", "tpudoctor.providers.slice_view", "tpudoctor.providers.worker_env")


def slice_registry(disabled: Collection[str] = ()) -> Any:
    """The registry a merge runs: the slice checks and their providers, plugins included less ``disabled``."""
    from tpudoctor.families import load_registry

    return load_registry(builtin=SLICE_BUILTINS, disabled=disabled)


def slice_results(view: SliceView, registry: Any = None) -> list[Finding]:
    """The slice checks' results on ``view``, run by the engine like any check (a crash is an ERROR
    result). A worker's own trouble comes first, in the order the workers gave it; then the others in
    the registry's order."""
    from tpudoctor.context import RunContext
    from tpudoctor.runner import Runner

    registry = registry if registry is not None else slice_registry()
    checks = {c.id: c for c in registry.check_classes() if c.runs_on == "slice"}
    troubles = dict.fromkeys(o.problem.id for o in view.outcomes.values() if o.problem is not None)
    first = [checks[i] for i in troubles if i in checks]
    ordered = first + [c for c in checks.values() if c not in first]
    results = Runner(registry, RunContext(target=view.target, slice=view)).results(ordered)
    # The merged report's durations are the workers' (a folded result: the slowest worker's); the merge's
    # own judgement adds none.
    return [dataclasses.replace(r, duration_s=0.0) for r in results]


def expected_workers(reports: dict[str, Report]) -> list[str]:
    """The slice's workers as the reports themselves know it (metadata server or GKE), else those present."""
    sizes = [r.environment.get("slice_workers") for r in reports.values()]
    size = max((s for s in sizes if isinstance(s, int) and s > 0), default=0)
    if size and all(w.isdigit() for w in reports):
        return [str(i) for i in range(max(size, max((int(w) + 1 for w in reports), default=0)))]
    return sorted(reports, key=natural_key)


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
