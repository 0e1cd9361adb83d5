"""``tpudoctor hang`` as a product: ``run`` takes the training processes' stacks and counters twice (or reads a
``--replay`` capture, ``--stacks`` dumps users already have), or merges the reports the workers wrote
(``inputs``, ``--merge``), or runs hang on every worker of the slice (``--all-workers``), and returns the
``HangReport`` (``tpudoctor.hang.analyze``, ``tpudoctor.hang.pod``). ``HangRunOptions.from_args`` turns the flags
and settings into options and refuses bad ones."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import time
from collections.abc import Callable, Sequence
from typing import Any

from tpudoctor.errors import UsageError
from tpudoctor.hang.report import HangReport

WORKER_SETTINGS = ("worker", "format", "disable_plugins")
"""The settings each worker of a fan-out takes from here; its target, ``--since`` and API limits are its own
(the slice's Megascale digests are read once, here, not by every worker)."""
WORKER_FLAGS = ("--interval", "--native", "--dump-timeout", "--tz", "--log-file", "--replay")
"""``hang``'s own flags (not settings) that each worker takes as they were given here. Not ``--redact``: the
merge redacts the slice's report with one set of placeholders for every worker."""


def worker_argv(args: Any, settings: Any, *, worker: str) -> list[str]:
    """The ``tpudoctor hang`` each worker runs (``Settings.worker_argv``): its own number, this run's choices, the
    plugins left out here too (the worker has neither our config file nor our environment), JSON on stdout."""
    return settings.worker_argv("hang", keys=WORKER_SETTINGS, args=args, flags=WORKER_FLAGS, format="json",
                                worker=worker)


@dataclasses.dataclass(frozen=True)
class HangRunOptions:
    target: Any
    """The gcloud-style target (``tpudoctor.findings.Target``), every name checked."""
    interval_s: float = 5.0
    pids: tuple[int, ...] = ()
    native: str = "auto"
    dump_timeout_s: float = 20.0
    log_files: tuple[str, ...] = ()
    tz: Any = None
    """The zone of log times that print none (live captures only)."""
    since_s: float = 3600.0
    dump_dir: str | None = None
    replay: str | None = None
    stacks: tuple[tuple[str, ...], ...] = ()
    """``--stacks``: the files of each time it was given."""
    worker: str | None = None
    disabled_plugins: tuple[str, ...] = ()
    cloud_digests: bool = False
    """Read Megascale digests from Cloud Logging: ``--since`` given on the command line, with a TPU and a project."""
    api_timeout_s: float = 10.0
    endpoints: Any = None
    fan_out: Callable[[], Any] | None = None
    """With ``--all-workers``/``--workers``: the ``FanOut`` to the slice's workers (made when the run starts)."""
    worker_argv: Callable[[str], list[str]] | None = None
    """The ``tpudoctor hang`` each worker of the fan-out runs."""

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> HangRunOptions:
        """The flags and settings as options; a flag that cannot be right is a ``UsageError``."""
        from tpudoctor import config

        target = settings.target()  # every name checked before it reaches gcloud or an API path
        interval_s = config.parse_duration_s(args.interval)
        dump_timeout_s = config.parse_duration_s(args.dump_timeout)
        if dump_timeout_s <= 0:
            raise UsageError("--dump-timeout must be positive")
        bad_pids = [pid for pid in args.pid or () if pid <= 0]
        if bad_pids:
            raise UsageError(f"--pid {bad_pids[0]}: not a valid process id (a process id is a whole number from 1 "
                             "up)", hint="list the job's processes with: ps -ef | grep python")
        fans_out = bool(getattr(args, "all_workers", False) or getattr(args, "workers", None))
        if args.replay and args.pid:
            raise UsageError("--replay reads a saved capture; --pid names live processes: give one of them")
        if args.stacks and (args.replay or args.pid or args.merge or fans_out):
            raise UsageError("--stacks reads dumps already taken: it takes no --pid, --replay, --merge or "
                             "--all-workers")
        if args.merge and (args.replay or args.pid or fans_out):
            raise UsageError("--merge reads the workers' reports: it takes no --replay, --pid or --all-workers")
        live = not (args.merge or args.stacks or args.replay or fans_out)
        options = cls(target=target, interval_s=interval_s, pids=tuple(args.pid or ()), native=args.native,
                      dump_timeout_s=dump_timeout_s, log_files=tuple(args.log_file or ()),
                      tz=_zone(args.tz) if live else None, since_s=settings.since_s, dump_dir=args.dump_dir,
                      replay=args.replay, stacks=tuple(tuple(group) for group in args.stacks or ()),
                      worker=args.worker, disabled_plugins=tuple(settings.disable_plugins or ()),
                      cloud_digests=bool(settings.source("since") == "flag" and target.project and target.tpu),
                      api_timeout_s=settings.api_timeout_s, endpoints=settings.endpoints)
        if not fans_out:
            return options

        def refuse() -> None:
            if args.pid:
                raise UsageError("--pid names processes on this VM; with --all-workers each worker finds its own")

        def fan_out() -> Any:
            from tpudoctor.pod.slice_target import slice_fan_out

            return slice_fan_out(args, settings, command="hang", refuse=refuse,
                                 longer_than=(interval_s, f"--interval {interval_s:g}s"))

        return dataclasses.replace(options, fan_out=fan_out,
                                   worker_argv=lambda worker: worker_argv(args, settings, worker=worker))


def run(inputs: Sequence[str], options: HangRunOptions, progress: Callable[[str], None] | None = None
        ) -> HangReport:
    """The hang report: of the workers' own reports ``inputs`` names (``--merge``), else of the slice's workers
    (``options.fan_out``), else of this VM's processes, a ``--replay`` capture or ``--stacks`` dumps."""
    if inputs:
        from tpudoctor.hang.pod import merge_answers, read_worker_documents

        return merge_answers(read_worker_documents(list(inputs)), target=options.target,
                             started_at=_dt.datetime.now(_dt.timezone.utc), interval_s=options.interval_s,
                             source=", ".join(inputs), digests=_cloud_digests(options)[0],
                             disabled_plugins=options.disabled_plugins)
    if options.fan_out is not None:
        return _fanout(options)
    started = time.monotonic()
    report = _from_stack_files(options) if options.stacks else _local(options, progress)
    report.duration_s = time.monotonic() - started
    return report


def _fanout(options: HangRunOptions) -> HangReport:
    """Every chosen worker's capture through the one fan-out (``tpudoctor.pod.FanOut``), analysed as one slice."""
    from tpudoctor.hang.pod import check_document, merge_outcomes
    from tpudoctor.hang.report import DOCUMENT_KIND
    from tpudoctor.pod.fanout import WorkerCommand

    assert options.fan_out is not None and options.worker_argv is not None  # set by from_args with --all-workers
    fan = options.fan_out()
    digests = _cloud_digests(options)[0]
    hang = WorkerCommand("hang", options.worker_argv, kind=DOCUMENT_KIND, what="hang report", read=check_document,
                         label=lambda w: f"worker {w}")
    return fan.run(hang, lambda outcomes: merge_outcomes(
        outcomes, target=options.target, started_at=fan.started_at, interval_s=options.interval_s, source=fan.via,
        digests=digests, disabled_plugins=options.disabled_plugins, dump_dir=options.dump_dir))


def _local(options: HangRunOptions, progress: Callable[[str], None] | None) -> HangReport:
    from tpudoctor.hang.analyze import analyze
    from tpudoctor.hang.capture import CaptureOptions, capture_live, read_dump_dir

    if options.replay:
        capture = read_dump_dir(options.replay)
        if options.worker not in (None, ""):
            capture.worker = str(options.worker)
            for c in capture.captures:
                c.worker = capture.worker
    else:
        capture = capture_live(CaptureOptions(pids=list(options.pids) or None, interval_s=options.interval_s,
                                              native=options.native, dump_timeout_s=options.dump_timeout_s,
                                              log_files=list(options.log_files), worker=options.worker,
                                              since_s=options.since_s, dump_dir=options.dump_dir,
                                              disabled_plugins=options.disabled_plugins, tz=options.tz),
                               on_progress=progress)
    found, note = _cloud_digests(options, worker=capture.worker)
    environment = dict(capture.environment)
    if note:
        environment["cloud_logging"] = note
    return analyze(capture.captures, target=dataclasses.replace(options.target, worker=capture.worker),
                   host=capture.host, started_at=capture.started_at, interval_s=capture.interval_s,
                   samples=capture.samples, digests=list(capture.digests) + found, environment=environment,
                   disabled_plugins=options.disabled_plugins)


def _from_stack_files(options: HangRunOptions) -> HangReport:
    from tpudoctor.hang.analyze import analyze
    from tpudoctor.hang.report import STACK_DUMPS_SOURCE
    from tpudoctor.hang.textdump import read_stack_dumps

    groups = [list(group) for group in options.stacks]
    dumps = read_stack_dumps(groups)
    captures = dumps.captures
    if options.worker not in (None, "") and len(captures) == 1:
        captures[0].worker = str(options.worker)
    samples = max((len(c.samples) for c in captures), default=0)
    taken = min((s.taken_at for c in captures for s in c.samples), default=_dt.datetime.now(_dt.timezone.utc))
    files = ", ".join(p for group in groups for p in group)
    notes = [f"{why}: read once" for why in dumps.repeated]
    # 0.0: the dumps carry no time of their own, and their files' times are too close to tell one
    return analyze(captures, target=options.target, host="", started_at=taken, interval_s=dumps.interval_s or 0.0,
                   samples=samples, environment={"source": f"{STACK_DUMPS_SOURCE}: {files}"},
                   disabled_plugins=options.disabled_plugins, input_notes=notes)


def _cloud_digests(options: HangRunOptions, *, worker: str | None = None) -> tuple[list, str | None]:
    """Megascale digests from Cloud Logging when ``--since`` is given with a TPU and a project; and a note."""
    from tpudoctor.gcp.session import Session
    from tpudoctor.hang.capture import cloud_digests

    target = options.target
    if not options.cloud_digests:
        return [], None
    session = Session(options.endpoints, timeout_s=options.api_timeout_s, project=target.project)
    return cloud_digests(target.project, target.zone, target.tpu, since_s=options.since_s, session=session,
                         worker=worker)


def _zone(name: str) -> Any:
    from tpudoctor.logs.clock import zone

    try:
        return zone(name)
    except ValueError as exc:
        raise UsageError(f"--tz: {exc}") from None
