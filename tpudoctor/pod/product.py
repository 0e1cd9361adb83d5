"""``tpudoctor merge`` as a product: ``run`` reads the reports each worker of a slice wrote itself (files,
folders, a ``gs://`` prefix) and merges them into one ``MergedReport``: each result with the workers it holds
on, and the slice checks run on the merge."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from tpudoctor.errors import InputError
from tpudoctor.pod.merge import MergedReport


@dataclasses.dataclass(frozen=True)
class MergeOptions:
    expected: list[str] | None = None
    """The workers the slice has (``--workers``); None: from the reports' own metadata."""
    tpu: str | None = None
    """The node's name for the fix commands (``--tpu``); None: from the reports."""
    disabled_plugins: tuple[str, ...] = ()
    session: Any = None
    """The run's Google Cloud session: the reports are read, and a ``gs://`` ``-o`` written, through it."""

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> MergeOptions:
        from tpudoctor.gcp.session import Session
        from tpudoctor.pod.worker_ids import parse_worker_spec
        from tpudoctor.resource_names import check_resource_name

        if args.tpu:  # it goes into the fix commands a person pastes
            check_resource_name("tpu", args.tpu, origin="--tpu")
        return cls(expected=parse_worker_spec(args.workers) if args.workers else None, tpu=args.tpu,
                   disabled_plugins=tuple(settings.disable_plugins or ()),
                   session=Session(settings.endpoints, timeout_s=settings.api_timeout_s))


def run(inputs: Sequence[str], options: MergeOptions, progress: Callable[[str], None] | None = None
        ) -> MergedReport:
    """The merge of the reports ``inputs`` name; none readable is an input error (the input is wrong, not the
    slice). Sources left out (a report of another kind) are said in the report's ``note``."""
    from tpudoctor.pod.merge import merge_outcomes, slice_registry
    from tpudoctor.pod.report_store import read_reports

    update = progress or (lambda message: None)
    update(f"reading {len(inputs)} source(s)")
    skipped: list[str] = []
    outcomes = read_reports(list(inputs), session=options.session, skipped=skipped)
    if not any(o.report is not None for o in outcomes):
        reasons = skipped + [o.problem.message for o in outcomes if o.problem is not None]
        raise InputError(f"none of the {len(outcomes) + len(skipped)} report(s) could be read: {reasons[0]}"
                         + (f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""),
                         hint="each worker writes one with: tpudoctor check --format json -o DIR/{worker}.json")
    update(f"merging {len(outcomes)} report(s)")
    merged = merge_outcomes(outcomes, expected=options.expected, source=", ".join(inputs),
                            registry=slice_registry(options.disabled_plugins), skipped=skipped)
    if options.tpu:
        merged.report.target.tpu = options.tpu
    merged.note = "".join(f"tpudoctor merge: left out {why}\n" for why in skipped) or None
    return merged
