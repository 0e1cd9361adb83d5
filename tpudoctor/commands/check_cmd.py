"""``tpudoctor check``: walk the five-step triage chain and name one root cause."""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import (
    add_gate_flags,
    add_output_flags,
    add_plugin_flag,
    add_redact_flag,
    add_target_flags,
)
from tpudoctor.commands.pod_check import add_pod_flags
from tpudoctor.formats import CHECK_FORMATS
from tpudoctor.product import Product
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
    add_gate_flags(parser.add_argument_group("exit status"))
    add_output_flags(parser)
    add_plugin_flag(parser)
    add_pod_flags(parser)
    add_redact_flag(parser)
    parser.set_defaults(handler=PRODUCT, settings_spec=SETTINGS)


PRODUCT = Product("check", "tpudoctor.triage", "TriageOptions", CHECK_FORMATS, worker_slot=True)
