"""``tpudoctor check`` as a product: ``run`` walks the five-step triage chain on this machine (the checks
selected, their facts gathered with timeouts) into a check ``Report``, or, with ``--all-workers``/``--workers``,
runs the check on every worker of the slice through ``gcloud ssh`` and merges their reports
(``pod.merge.MergedReport``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tpudoctor.context import CheckOptions
from tpudoctor.errors import InputError, UsageError
from tpudoctor.findings import Target


@dataclasses.dataclass(frozen=True)
class TriageOptions:
    check: CheckOptions
    target: Target
    run_timeout_s: float = 600.0
    ids: tuple[str, ...] = ()
    """Run only these check ids (none: every worker check)."""
    steps: tuple[int, ...] = ()
    """Run only these steps (none: all five)."""
    disabled_plugins: tuple[str, ...] = ()
    session: Any = None
    """The run's Google Cloud session: the cloud checks, a ``gs://`` ``-o``."""
    fan_out: Any = None
    """The slice's ``pod.FanOut`` and each worker's ``tpudoctor check`` argv (``--all-workers``); None: here."""

    @property
    def inputs(self) -> list[str]:
        """The logs this run reads here (a fan-out's are paths on the workers)."""
        return [] if self.fan_out else list(self.check.log_files)

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> TriageOptions:
        from tpudoctor.gcp.session import Session

        target = settings.target()  # every name checked before it reaches gcloud or an API path
        check = CheckOptions(
            data_paths=list(settings.data), checkpoint_dirs=list(settings.checkpoint_dir),
            log_dirs=list(settings.log_dir), log_files=list(settings.log_file), baseline_log=args.baseline_log,
            since_s=settings.since_s, probe=args.probe, write_probe=args.write_probe,
            reference_model=args.reference_model, reference_timeout_s=settings.reference_timeout_s,
            api_timeout_s=settings.api_timeout_s)
        if settings.timeout_s <= 0:
            raise UsageError("--timeout must be positive")
        fan_out = None
        if args.all_workers or args.workers:
            fan_out = _fan_out(args, settings)
        else:  # here, not before the fan-out: there they are the workers' paths
            _check_log_files(check.log_files)
            _check_baseline_log(check.baseline_log, check.log_files)
        return cls(check=check, target=target, run_timeout_s=settings.timeout_s, ids=tuple(args.ids),
                   steps=tuple(args.step or ()), disabled_plugins=tuple(settings.disable_plugins or ()),
                   session=Session(settings.endpoints, timeout_s=check.api_timeout_s, project=target.project),
                   fan_out=fan_out)


def run(inputs: Sequence[str], options: TriageOptions, progress: Callable[[str], None] | None = None) -> Any:
    """The check report of this machine, or the merged report of every worker's (``options.fan_out``)."""
    from tpudoctor.families import load_registry
    from tpudoctor.pod.merge import merge_outcomes, slice_registry

    if options.fan_out is not None:
        fan, check = options.fan_out
        return fan.run(check, lambda outcomes: merge_outcomes(
            outcomes, expected=fan.workers, target=options.target, source=fan.via,
            registry=slice_registry(options.disabled_plugins)))
    from tpudoctor.context import RunContext
    from tpudoctor.runner import Runner

    registry = load_registry(disabled=options.disabled_plugins)
    ctx = RunContext(target=options.target, options=options.check, run_timeout_s=options.run_timeout_s,
                     session=options.session)
    return Runner(registry, ctx, progress=progress).run(_selected(registry, options))


def _selected(registry: Any, options: TriageOptions) -> list[Any]:
    """The worker checks the ids and steps select (slice checks run on merges), and the plugins' problems."""
    selected = [c for c in registry.check_classes() if c.runs_on == "worker"]
    if options.ids:
        unknown = sorted(set(options.ids) - set(registry.checks))
        if unknown:
            raise UsageError(f"unknown check id(s): {', '.join(unknown)}", hint="run 'tpudoctor list-checks'")
        selected = [c for c in selected if c.id in set(options.ids)]
    if options.steps:
        selected = [c for c in selected if int(c.step) in set(options.steps)]
    if not selected:
        raise UsageError("no checks selected", hint="check the ids and --step values; see 'tpudoctor list-checks'")
    return selected + [c for c in registry.plugin_problem_checks() if c not in selected]  # shown whatever was asked


def _fan_out(args: Any, settings: Any) -> tuple[Any, Any]:
    """The ``FanOut`` to the slice and the ``WorkerCommand`` each worker runs."""
    from tpudoctor.pod.documents import report_from_document
    from tpudoctor.pod.fanout import WorkerCommand
    from tpudoctor.pod.report_store import has_placeholder
    from tpudoctor.pod.slice_target import slice_fan_out

    def refuse() -> None:
        """What ``check`` cannot send to every worker."""
        if "-" in (args.log_file or []):
            raise UsageError("--log-file - (stdin) cannot go to every worker", hint="give a path on the workers")
        if has_placeholder(args.output) or (args.output or "").startswith("gs://"):
            raise UsageError(f"-o {args.output}: the fan-out writes one merged report to a local file or stdout",
                             hint="the per-worker reports are inside the merged JSON (--format json), under "
                                  "'workers'")

    fan = slice_fan_out(args, settings, command="check", refuse=refuse)
    return fan, WorkerCommand("check", lambda w: worker_argv(args, settings, worker=w, timeout_s=fan.worker_limit_s),
                              kind="check", what="check report", read=report_from_document)


WORKER_FLAGS = ("--step", "--probe", "--write-probe", "--redact")
"""``check``'s own flags (not settings) that each worker takes as they were given here."""


def worker_argv(args: Any, settings: Any, *, worker: str, timeout_s: float) -> list[str]:
    """The ``tpudoctor check`` each worker runs: our settings as resolved here (``Settings.worker_argv``: the worker
    has neither our config file nor our environment), its own number and limit, the user's selection, JSON on
    stdout."""
    flags = WORKER_FLAGS + (("--reference-model",) if args.step is None or 5 in args.step else ())
    # --exit-zero always: a worker's findings travel in its report, and its exit status tells only how it ran
    return settings.worker_argv("check", args=dict(vars(args), exit_zero=True), flags=(*flags, "--exit-zero"),
                                positional=list(args.ids), format="json", timeout_s=max(1.0, timeout_s),
                                worker=worker)


def remote_command(args: Any, settings: Any, *, worker: str, timeout_s: float) -> str:
    """``worker_argv`` as the worker's shell reads it."""
    import shlex

    return shlex.join(worker_argv(args, settings, worker=worker, timeout_s=timeout_s))


def _check_baseline_log(baseline: str | None, log_files: list[str]) -> None:
    """The good run's log must be a readable file, and there must be a failing log to compare it with."""
    from tpudoctor.logs.sources import readable_problem

    if baseline is None:
        return
    if not log_files:
        raise UsageError("--baseline-log needs the failing run's log: give --log-file FILE too")
    problem = readable_problem(baseline) if baseline != "-" else "stdin is for --log-file"
    if problem is None and not Path(baseline).is_file():
        problem = "not a file (give one log of the last good run)"
    if problem is not None:
        raise InputError(f"--baseline-log {baseline}: {problem}",
                         hint="give the log of the last good run of the same job, as a file")


def _check_log_files(paths: list[str]) -> None:
    """A log that cannot be read is a usage error (exit 2), not a check result. Any readable stream will
    do: a file, ``-``, ``/dev/stdin``, a FIFO, ``<(cmd)``, or a folder of logs."""
    from tpudoctor.logs.sources import readable_problem

    if paths.count("-") > 1:
        raise InputError("--log-file - (stdin) can be given only once")
    for path in paths:
        problem = readable_problem(path)
        if problem is not None:
            raise InputError(f"--log-file {path}: {problem}",
                             hint="give your job's log: a file, a folder of logs, or '-' for stdin")
