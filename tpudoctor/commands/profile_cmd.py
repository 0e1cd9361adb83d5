"""``tpudoctor profile``: take a profile from a running job (``capture``) and read one (``analyze``); the
products are ``tpudoctor.profile.product``."""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import (
    add_cluster_flag,
    add_gate_flags,
    add_plugin_flag,
    add_redact_flag,
)
from tpudoctor.formats import PROFILE_FORMATS
from tpudoctor.product import Product

ANALYZE_SETTINGS = {"format": "text", "cluster": None, "disable_plugins": None, "fail_on": "fail"}
CAPTURE_SETTINGS = {"project": None, "zone": None, "tpu": None}
"""The settings each sub-command takes (flag > environment > config file > these defaults)."""
ANALYZE = Product("profile analyze", "tpudoctor.profile.product", "ProfileOptions", PROFILE_FORMATS, inputs="path",
                  pause_gc=True)
CAPTURE = Product("profile capture", "tpudoctor.profile.product", "CaptureOptions", entry="capture")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "profile",
        help="capture a profile from a running job, or analyse one (.xplane.pb, run dir, logdir)",
        description="Capture and analyse TensorFlow/JAX profiles (XSpace .xplane.pb files).",
    )
    commands = parser.add_subparsers(dest="profile_command", metavar="COMMAND", parser_class=type(parser))
    _register_analyze(commands)
    _register_capture(commands)
    parser.set_defaults(handler=None, help_parser=parser)  # no sub-command: its help, exit 2


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
    add_gate_flags(parser.add_argument_group("exit status"))
    add_redact_flag(parser)
    add_cluster_flag(parser)
    add_plugin_flag(parser)
    parser.set_defaults(handler=ANALYZE, settings_spec=ANALYZE_SETTINGS)


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
    parser.set_defaults(handler=CAPTURE, settings_spec=CAPTURE_SETTINGS)
