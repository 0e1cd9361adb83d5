"""``tpudoctor check``: walk the five-step triage chain and name one root cause."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tpudoctor.commands.common import (
    add_output_flags,
    add_plugin_flag,
    add_redact_flag,
    add_target_flags,
)
from tpudoctor.commands.pod_check import add_pod_flags, wants_fanout
from tpudoctor.exitcodes import ExitCode
from tpudoctor.reference_models import (
    MODEL_NAMES as REFERENCE_MODEL_NAMES,  # names only; no framework import
)

SETTINGS = {"project": None, "zone": None, "tpu": None, "worker": None, "data": None, "checkpoint_dir": None,
            "log_dir": None, "log_file": None, "since": "1h", "timeout": "600s", "api_timeout": "10s",
            "reference_timeout": "300s", "format": "text", "fail_on": "fail", "disable_plugins": None}
"""The settings ``check`` takes (flag > environment > config file > these defaults)."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "check",
        help="triage a failed TPU job: node, GCS, runtime, logs, reference model",
        description="Run the triage checks in order and report the root cause with a fix.",
    )
    parser.add_argument("ids", nargs="*", metavar="ID", help="run only these check ids (see list-checks)")
    parser.add_argument("--step", type=int, action="append", choices=range(1, 6), metavar="N",
                        help="run only step N (1 node, 2 GCS, 3 runtime, 4 logs, 5 reference model); repeatable")
    add_target_flags(parser)
    inputs = parser.add_argument_group("inputs")
    inputs.add_argument("--data", action="append", default=None, metavar="URI", help="training data path (gs://...); repeatable")
    inputs.add_argument("--checkpoint-dir", action="append", default=None, metavar="URI", help="checkpoint directory; repeatable")
    inputs.add_argument("--log-dir", action="append", default=None, metavar="URI", help="TensorBoard/profile log directory; repeatable")
    inputs.add_argument("--log-file", action="append", default=None, metavar="FILE", help="your job's log file ('-' for stdin; with --workers or --all-workers, a path on "
                        "the workers); repeatable")
    inputs.add_argument("--baseline-log", default=None, metavar="FILE",
                        help="a log of the last good run of the same job: rank the lines of --log-file's log that it "
                             "never printed (or printed far less often); an unrecognised failure quotes the top ones")
    inputs.add_argument("--since", default=None, metavar="DURATION", help="how far back to read Cloud Logging (default 1h)")
    inputs.add_argument("--probe", action="store_true", help="start the framework in a subprocess and list its devices")
    inputs.add_argument("--write-probe", action="store_true",
                        help="write and delete one probe object in each writable GCS path (off by default: never writes otherwise)")
    inputs.add_argument("--reference-model", default="dense", choices=REFERENCE_MODEL_NAMES, metavar="NAME",
                        help=f"model for step 5: {', '.join(REFERENCE_MODEL_NAMES)} (default: dense)")
    inputs.add_argument("--reference-timeout", default=None, metavar="DURATION",
                        help="limit for the step 5 reference run (default 300s)")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--timeout", default=None, metavar="DURATION", help="limit for the whole run (default 600s)")
    limits.add_argument("--api-timeout", default=None, metavar="DURATION", help="limit for each cloud API call (default 10s)")
    gate = parser.add_argument_group("exit status")
    gate.add_argument("--fail-on", choices=("warn", "fail"), default=None, help="lowest status that exits 1 (default: fail)")
    gate.add_argument("--exit-zero", action="store_true", help="always exit 0 unless tpudoctor itself breaks")
    add_output_flags(parser)
    add_plugin_flag(parser)
    add_pod_flags(parser)
    add_redact_flag(parser)
    parser.set_defaults(handler=run, settings_spec=SETTINGS)


def run(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor.context import CheckOptions, RunContext
    from tpudoctor.errors import UsageError
    from tpudoctor.families import load_registry
    from tpudoctor.formats import CHECK_FORMATS
    from tpudoctor.progress import progress
    from tpudoctor.runner import Runner

    target = settings.target()  # every name checked before it reaches gcloud or an API path
    options = CheckOptions(
        data_paths=list(settings.data), checkpoint_dirs=list(settings.checkpoint_dir),
        log_dirs=list(settings.log_dir), log_files=list(settings.log_file), baseline_log=args.baseline_log,
        since_s=settings.since_s,
        probe=args.probe, write_probe=args.write_probe, reference_model=args.reference_model,
        reference_timeout_s=settings.reference_timeout_s, api_timeout_s=settings.api_timeout_s,
    )
    run_timeout_s = settings.timeout_s
    if run_timeout_s <= 0:
        raise UsageError("--timeout must be positive")
    fmt = settings.format_for(CHECK_FORMATS)
    from tpudoctor.output import check_output
    from tpudoctor.pod.report_store import PLACEHOLDERS

    output = args.output
    for placeholder in PLACEHOLDERS:  # the folder must be usable whatever the worker fills in
        output = output.replace(placeholder, "0") if output else output
    check_output(output, inputs=list(settings.log_file) if not wants_fanout(args) else ())
    fail_on = settings.fail_on

    if wants_fanout(args):
        from tpudoctor.commands.pod_check import run_fanout

        return run_fanout(args, settings, fmt=fmt, fail_on=fail_on)

    _check_log_files(options.log_files)  # here, not before the fan-out: there they are the workers' paths
    _check_baseline_log(options.baseline_log, options.log_files)
    registry = load_registry(disabled=settings.disable_plugins)
    selected = [c for c in registry.check_classes() if c.runs_on == "worker"]  # slice checks run on merges
    if args.ids:
        unknown = sorted(set(args.ids) - set(registry.checks))
        if unknown:
            raise UsageError(f"unknown check id(s): {', '.join(unknown)}", hint="run 'tpudoctor list-checks'")
        selected = [c for c in selected if c.id in set(args.ids)]
    if args.step:
        selected = [c for c in selected if int(c.step) in set(args.step)]
    if not selected:
        raise UsageError("no checks selected", hint="check the ids and --step values; see 'tpudoctor list-checks'")
    selected += [c for c in registry.plugin_problem_checks() if c not in selected]  # shown whatever was asked for

    from tpudoctor.commands.common import session_for

    session = session_for(settings, timeout_s=options.api_timeout_s, project=target.project)
    ctx = RunContext(target=target, options=options, run_timeout_s=run_timeout_s, session=session)
    with progress("tpudoctor check") as update:
        report = Runner(registry, ctx, progress=update).run(selected)
    from tpudoctor.documents import prepare
    from tpudoctor.findings import Gate, exit_code_for
    from tpudoctor.rendering import render

    document = prepare(report, redact=args.redact)  # scrubbed and validated once, before any renderer
    text = render(document, fmt, verbose=args.verbose, color=_color_wanted(args), gate=Gate(fail_on, args.exit_zero))
    _write_report(args, report, text, fmt, session)
    return exit_code_for(report, fail_on=fail_on, exit_zero=args.exit_zero)


def _write_report(args: argparse.Namespace, report, text: str, fmt: str, session) -> None:
    """``-o`` may name this worker's slot in a pod-wide place: ``gs://bucket/run/{worker}.json``."""
    from tpudoctor.output import write_text
    from tpudoctor.pod.report_store import fill_placeholders, has_placeholder

    path = args.output
    if has_placeholder(path):
        path = fill_placeholders(path, report, session=session)
    write_text(path, text, fmt=fmt, session=session)


def _check_baseline_log(baseline: str | None, log_files: list[str]) -> None:
    """The good run's log must be a readable file, and there must be a failing log to compare it with."""
    from tpudoctor.errors import InputError, UsageError
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
    from tpudoctor.errors import InputError
    from tpudoctor.logs.sources import readable_problem

    if paths.count("-") > 1:
        raise InputError("--log-file - (stdin) can be given only once")
    for path in paths:
        problem = readable_problem(path)
        if problem is not None:
            raise InputError(f"--log-file {path}: {problem}",
                             hint="give your job's log: a file, a folder of logs, or '-' for stdin")


def _color_wanted(args: argparse.Namespace) -> bool:
    return args.output in (None, "-") and sys.stdout.isatty()
