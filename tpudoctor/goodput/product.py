"""``tpudoctor goodput`` as a product: ``run`` reads the job's logs (files, or Cloud Logging for a TPU VM or a
GKE workload), accounts the goodput, and returns the ``GoodputReport``; with ``goodput_job`` it also compares
ml-goodput-measurement's own account. ``GoodputOptions.from_args`` turns the flags into options and refuses
bad ones."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from tpudoctor.errors import UsageError
from tpudoctor.goodput.report import GoodputReport

MIN_YEAR, MAX_YEAR = 1970, 9999


@dataclasses.dataclass(frozen=True)
class GoodputOptions:
    step_pattern: Any = None
    """A compiled step line pattern (``readers.step_pattern``), or None."""
    year: int | None = None
    tz: Any = None
    min_ettr: float | None = None
    disabled_plugins: tuple[str, ...] = ()
    # Cloud Logging (any of tpu, gke_cluster, gke_workload reads the cloud instead of files)
    tpu: str | None = None
    worker: str | None = None
    gke_cluster: str | None = None
    gke_namespace: str | None = None
    gke_workload: str | None = None
    goodput_job: str | None = None
    goodput_log: str | None = None
    project: str | None = None
    zone: str | None = None
    since_s: float = 0.0
    api_timeout_s: float = 30.0
    endpoints: Any = None

    @property
    def cloud(self) -> bool:
        return bool(self.tpu or self.gke_cluster or self.gke_workload)

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> GoodputOptions:
        """The flags and settings as options; a flag that cannot be right is a ``UsageError``."""
        from tpudoctor.config import parse_ratio
        from tpudoctor.logs.clock import zone

        min_ettr = parse_ratio(args.min_ettr, flag="--min-ettr") if args.min_ettr is not None else None
        if args.year is not None and not MIN_YEAR <= args.year <= MAX_YEAR:
            raise UsageError(f"--year out of range: {args.year} (give a year from {MIN_YEAR} to {MAX_YEAR})")
        step_pattern = None
        if args.step_pattern:
            from tpudoctor.goodput.readers import step_pattern as make_step_pattern

            try:
                step_pattern = make_step_pattern(args.step_pattern)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        try:
            tz = zone(args.tz)
        except ValueError as exc:
            raise UsageError(f"--tz: {exc}") from None
        options = cls(step_pattern=step_pattern, year=args.year, tz=tz, min_ettr=min_ettr,
                      disabled_plugins=tuple(settings.disable_plugins or ()), tpu=args.tpu, worker=args.worker,
                      gke_cluster=args.gke_cluster, gke_namespace=args.gke_namespace, gke_workload=args.gke_workload,
                      goodput_job=args.goodput_job, goodput_log=args.goodput_log, project=settings.project,
                      zone=settings.zone, since_s=settings.since_s, api_timeout_s=settings.api_timeout_s,
                      endpoints=settings.endpoints)
        if options.cloud and args.logs:
            raise UsageError("give LOG files or a Cloud Logging target (--tpu, --gke-cluster), not both")
        if not options.cloud and not args.logs:
            raise UsageError("say which logs to read: LOG files ('-' for stdin), --tpu NAME, or --gke-cluster C "
                             "--gke-workload W", hint="tpudoctor goodput train.log")
        if args.goodput_job and not options.cloud:
            raise UsageError("--goodput-job reads Cloud Logging: give --tpu NAME or --gke-cluster/--gke-workload too")
        return options


def run(inputs: Sequence[str], options: GoodputOptions, progress: Callable[[str], None] | None = None
        ) -> GoodputReport:
    """The goodput of the job whose logs ``inputs`` name (files, '-' for stdin), or of the Cloud Logging target
    the options name."""
    update = progress or (lambda message: None)
    if options.cloud:
        return GoodputReport(_from_cloud(options, update))
    from tpudoctor.goodput.analyze import analyze_paths

    return GoodputReport(analyze_paths(list(inputs), step_pattern=options.step_pattern, year=options.year,
                                       tz=options.tz, min_ettr=options.min_ettr, on_progress=update,
                                       disabled_plugins=options.disabled_plugins))


def _from_cloud(options: GoodputOptions, update: Callable[[str], None]) -> dict:
    from tpudoctor.gcp.session import Session
    from tpudoctor.goodput.analyze import analyze_events, readers_for
    from tpudoctor.goodput.cloud import CloudTarget, compare_accounts, job_events, recorder_entries
    from tpudoctor.goodput.recorder import recorder_account
    from tpudoctor.resource_names import check_resource_name

    # Every name goes into a Cloud Logging filter: each valid by its own rule before it does (the project and
    # the zone were checked with the settings).
    project = options.project
    for key in ("tpu", "worker", "gke_cluster", "gke_namespace", "gke_workload"):
        check_resource_name(key, getattr(options, key, None), origin=f"--{key.replace('_', '-')}")
    if not project:
        raise UsageError("Cloud Logging needs a project: --project, CLOUDSDK_CORE_PROJECT or 'project' in "
                         "tpudoctor.toml")
    if (options.gke_cluster or options.gke_workload) and not (options.gke_cluster and options.gke_workload):
        raise UsageError("a GKE workload needs both --gke-cluster and --gke-workload")
    target = CloudTarget(project=project, since_s=options.since_s, tpu=options.tpu, zone=options.zone,
                         gke_cluster=options.gke_cluster, gke_namespace=options.gke_namespace,
                         gke_workload=options.gke_workload, worker=options.worker)
    session = Session(options.endpoints, timeout_s=options.api_timeout_s, project=project)
    update(f"reading {target.name}")
    name, events, stats = job_events(target, readers=readers_for(options.step_pattern), session=session)
    extra: dict[str, Any] = {"cloud": {"filter": stats["filter"], "project": project}}
    payloads: list = []
    if options.goodput_job:
        update(f"reading ml-goodput-measurement's entries for {options.goodput_job}")
        payloads = recorder_entries(project, options.goodput_log, options.goodput_job, options.since_s,
                                    session=session)
        extra["instrumented"] = {"job_name": options.goodput_job, "log_name": options.goodput_log,
                                 "entries": len(payloads)}
    document = analyze_events([(name, events, stats)], min_ettr=options.min_ettr, extra=extra,
                              disabled_plugins=options.disabled_plugins)
    document["cloud"]["entries"] = stats.get("entries", 0)  # counted while the events were read
    if options.goodput_job:
        info = document["instrumented"]
        if not info["entries"]:
            info["lines"] = [f"no entries for job {options.goodput_job} in log {options.goodput_log}: the job did "
                             "not use ml-goodput-measurement's recorder, or wrote elsewhere (--goodput-log)"]
        else:
            recorded = recorder_account(payloads, now=time.time())
            info["account"] = recorded
            info.update(compare_accounts(document["goodput"], recorded))
    return document
