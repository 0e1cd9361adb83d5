"""``tpudoctor profile``: take a profile from a running job (``capture``) and read one (``analyze``).

Layers: ``tpudoctor.profile.analyze`` parses and analyses (the library pipeline, per-host map then
combine) into a ``ProfileReport``; ``tpudoctor.reports.profile_<format>`` renders it.
"""

from __future__ import annotations

import argparse
import sys
import time

from tpudoctor.commands.common import add_cluster_flag, add_plugin_flag, add_redact_flag
from tpudoctor.exitcodes import ExitCode
from tpudoctor.formats import PROFILE_FORMATS

ANALYZE_SETTINGS = {"format": "text", "cluster": None, "disable_plugins": None, "fail_on": None}
CAPTURE_SETTINGS = {"project": None, "zone": None, "tpu": None}
"""The settings each sub-command takes (flag > environment > config file > these defaults)."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "profile",
        help="capture a profile from a running job, or analyse one (.xplane.pb, run dir, logdir)",
        description="Capture and analyse TensorFlow/JAX profiles (XSpace .xplane.pb files).",
    )
    commands = parser.add_subparsers(dest="profile_command", metavar="COMMAND", parser_class=type(parser))
    _register_analyze(commands)
    _register_capture(commands)
    parser.set_defaults(handler=lambda args, settings: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> ExitCode:
    parser.print_help(sys.stderr)
    return ExitCode.USAGE_ERROR


def _register_analyze(commands: argparse._SubParsersAction) -> None:
    # the verdicts the rules score, so the help cannot drift from them
    from tpudoctor.profile.rule import BOTTLENECKS

    parser = commands.add_parser(
        "analyze",
        help="why is my TPU job slow: verdict, step breakdown, input, host ops, recompilation",
        description="Load a capture (a .xplane.pb, a run directory or a logdir, local or gs://) and report on it: "
                    f"a one-line verdict ({', '.join(BOTTLENECKS)} or unknown), "
                    "findings with evidence and fixes, the step-time breakdown and top tables.",
    )
    parser.add_argument("path", metavar="PATH", help="a .xplane.pb file, a run directory, or a logdir (local or gs://); "
                                                     "or an op trace of a pipeline-parallel job (trace.parquet, its "
                                                     "meta-*.yaml beside it) for the straggler what-if")
    parser.add_argument("--run", help="run folder of a logdir to read (default: the newest)")
    parser.add_argument("--format", choices=PROFILE_FORMATS, default=None,
                        help="report format (default: $TPUDOCTOR_FORMAT, the config file's format, or text)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--fail-on", choices=("warn", "fail"), default=None,
                        help="exit 1 when a finding is at or above this status (a CI gate; default: no gate, "
                             "exit 0 whatever the capture shows)")
    add_redact_flag(parser)
    add_cluster_flag(parser)
    add_plugin_flag(parser)
    parser.set_defaults(handler=run_analyze, settings_spec=ANALYZE_SETTINGS)


def run_analyze(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor.output import write_text
    from tpudoctor.profile.op_trace import is_op_trace
    from tpudoctor.profile.pipeline import cyclic_gc_paused
    from tpudoctor.progress import progress

    fmt = settings.format_for(PROFILE_FORMATS)
    from tpudoctor.output import check_output

    check_output(args.output, inputs=[args.path])  # before a capture that may take minutes to read
    started = time.monotonic()
    cluster = settings.cluster
    with cyclic_gc_paused():  # the analysis and the rendering free what they make by reference counting
        with progress("Reading op trace" if is_op_trace(args.path) else "Reading profile") as update:
            update(args.path)
            report = build_report(args.path, run=args.run, on_progress=update, cluster=cluster,
                                  disabled_plugins=settings.disable_plugins)
        report.duration_s = time.monotonic() - started
        from tpudoctor.documents import prepare

        document = prepare(report, redact=args.redact)
        text = render(document, fmt, color=args.output in (None, "-") and sys.stdout.isatty() and not args.redact)
    write_text(args.output, text, fmt=fmt)
    from tpudoctor.findings import exit_code_for

    # no gate unless one is asked for (--fail-on, TPUDOCTOR_FAIL_ON or the config file): exit 0 whatever it shows
    return exit_code_for(report, fail_on=settings.fail_on or "fail", exit_zero=settings.fail_on is None)


def build_report(path: str, *, run: str | None = None, on_progress=None, cluster: str | None = None,
                 disabled_plugins: tuple[str, ...] = ()):
    """The library pipeline's ``ProfileReport`` (data only); for an op trace (parquet), its what-if report
    (``profile.op_trace_report``)."""
    from tpudoctor.profile.op_trace import is_op_trace

    if is_op_trace(path):
        from tpudoctor.profile.op_trace_report import analyze_op_trace

        return analyze_op_trace(path)
    from tpudoctor.profile.pipeline import analyze

    return analyze(path, run=run, on_progress=on_progress, cluster=cluster, disabled_plugins=disabled_plugins)


def render(document: dict, fmt: str, *, color: bool = False) -> str:
    """A profile report's prepared document (``tpudoctor.documents.prepare``) in ``fmt``."""
    from tpudoctor.rendering import render as render_document

    return render_document(document, fmt, color=color)


def _register_capture(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "capture",
        help="take a profile from a running TensorFlow/JAX job through its profiler server",
        description=(
            "Capture a profile from a process that runs a profiler server "
            "(tf.profiler.experimental.server.start(PORT) or jax.profiler.start_server(PORT)), "
            "like capture_tpu_profile does. Needs TensorFlow installed (pip install 'tpudoctor[tf]')."
        ),
    )
    target = parser.add_mutually_exclusive_group()  # or --tpu from TPU_NAME / the config file
    target.add_argument("--service-addr", metavar="HOST:PORT[,HOST:PORT...]",
                        help="profiler server(s) to capture from, e.g. localhost:9012")
    target.add_argument("--tpu", metavar="NAME", help="Cloud TPU name: capture from its workers' port (default 8466)")
    parser.add_argument("--all-workers", action="store_true", help="with --tpu: every worker (default: worker 0)")
    parser.add_argument("--project", help="with --tpu: Google Cloud project")
    parser.add_argument("--zone", help="with --tpu: zone of the TPU")
    parser.add_argument("--port", type=int, default=8466, help="with --tpu: profiler port on the workers (default 8466)")
    parser.add_argument("--duration", default="3s", metavar="DURATION", help="how long to trace (default 3s)")
    parser.add_argument("--logdir", required=True, metavar="DIR|gs://...", help="where to write plugins/profile/<run>/")
    parser.add_argument("--retries", type=int, default=3, metavar="N",
                        help="attempts when the trace comes back empty or the server is busy (default 3)")
    parser.add_argument("--host-tracer-level", type=int, choices=(1, 2, 3), default=2,
                        help="host (TraceMe) detail: 1 user, 2 + runtime (default), 3 everything")
    parser.add_argument("--python-tracer-level", type=int, choices=(0, 1), default=0,
                        help="1 traces Python function calls (slow)")
    parser.add_argument("--device-tracer-level", type=int, choices=(0, 1), default=1,
                        help="0 turns device tracing off")
    parser.set_defaults(handler=run_capture, settings_spec=CAPTURE_SETTINGS)


def run_capture(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor import config
    from tpudoctor.errors import UsageError
    from tpudoctor.profile.remote import CaptureRequest, capture, service_addresses_for_tpu
    from tpudoctor.progress import progress

    duration_s = config.parse_duration_s(args.duration)
    if duration_s <= 0:
        raise UsageError("--duration must be positive, e.g. 3s")
    if args.retries < 1:
        raise UsageError("--retries must be at least 1")
    target = settings.target()
    tpu = None if args.service_addr else target.tpu
    if args.service_addr:
        if args.all_workers:
            raise UsageError("--all-workers goes with --tpu; list several --service-addr HOST:PORT,HOST:PORT instead")
        addresses = [part.strip() for part in args.service_addr.split(",") if part.strip()]
    elif not tpu:
        raise UsageError("say where to capture from: --service-addr HOST:PORT or --tpu NAME",
                         hint="--tpu may also come from TPU_NAME or 'tpu' in tpudoctor.toml")
    else:
        addresses = service_addresses_for_tpu(
            tpu, project=target.project, zone=target.zone, port=args.port, all_workers=args.all_workers,
        )
    request = CaptureRequest(
        addresses=addresses, logdir=args.logdir, duration_ms=int(duration_s * 1000), attempts=args.retries,
        host_tracer_level=args.host_tracer_level, python_tracer_level=args.python_tracer_level,
        device_tracer_level=args.device_tracer_level,
    )
    with progress(f"Capturing {duration_s:g}s from {', '.join(addresses)}", enabled=None) as update:
        result = capture(request, on_progress=update)
    for path in result.files:
        print(path)
    sys.stderr.write(f"captured {len(result.files)} host file(s) into run {result.run} "
                     f"in {result.elapsed_s:.1f}s (attempt {result.attempt} of {request.attempts})\n"
                     f"next: tpudoctor profile analyze {args.logdir}\n")
    return ExitCode.OK
