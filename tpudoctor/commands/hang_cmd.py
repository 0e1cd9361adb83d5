"""``tpudoctor hang``: is the job stuck, which process does it wait for, where does it stand, what to do.

The product is ``tpudoctor.hang.product``: ``tpudoctor.hang.capture`` takes the stacks, counters and log lines
(or reads a ``--dump-dir`` back), ``tpudoctor.hang.analyze`` makes the ``HangReport`` (verdict, cause, decide,
report_findings: one stage each); ``--all-workers`` / ``--workers`` run it on every worker of a slice through the
one fan-out (``tpudoctor.pod.FanOut``) and analyse the captures together (``tpudoctor.hang.pod``).
``tpudoctor.reports.views.hang`` is its view.
"""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import (
    add_output_flags,
    add_plugin_flag,
    add_redact_flag,
    add_target_flags,
)
from tpudoctor.commands.pod_check import add_pod_flags
from tpudoctor.formats import HANG_FORMATS
from tpudoctor.product import Product

SETTINGS = {"project": None, "zone": None, "tpu": None, "worker": None, "since": "1h", "api_timeout": "10s",
            "format": "text", "fail_on": "fail", "disable_plugins": None}
"""The settings ``hang`` takes (flag > environment > config file > these defaults)."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "hang",
        help="a job stopped moving: find the process the others wait for, where it stands, and what to do",
        description="Take every thread's stack of the training processes (py-spy) twice, --interval apart, with "
                    "their logs' step counters: say whether the job moves, group the processes by where they "
                    "stand, name the odd one out and its frame, and decide: RESTART, FIX CODE or REPLACE HOST. "
                    "Taking a stack pauses a process for a few milliseconds (native frames, only taken from "
                    "processes that did not move: up to about 0.2 s).",
    )
    which = parser.add_argument_group("which processes")
    which.add_argument("--pid", type=int, action="append", default=None, metavar="PID",
                       help="a training process (repeatable); default: those holding /dev/accel* or /dev/vfio/*, "
                            "else Python processes that loaded JAX, torch_xla or TensorFlow")
    sampling = parser.add_argument_group("sampling")
    sampling.add_argument("--interval", default="5s", metavar="DURATION",
                          help="time between the two samples (default 5s): stacks or step counters that move "
                               "mean progress")
    sampling.add_argument("--native", choices=("auto", "always", "never"), default="auto",
                          help="C/C++ frames too (py-spy --native): auto takes them from processes that did not "
                               "move, where they tell a collective from a device wait (default auto)")
    sampling.add_argument("--dump-timeout", default="20s", metavar="DURATION",
                          help="limit for each py-spy dump (default 20s)")
    inputs = parser.add_argument_group("logs")
    inputs.add_argument("--log-file", action="append", default=None, metavar="FILE",
                        help="the job's log (repeatable); the processes' own open logs and $TPU_LOG_DIR are read too")
    inputs.add_argument("--tz", default="UTC", metavar="ZONE",
                        help="zone of log times that print none (glog/absl): UTC (default: TPU VMs and GKE log in UTC), "
                             "local, an offset such as +05:30, or a name such as Europe/Paris")
    inputs.add_argument("--since", default=None, metavar="DURATION",
                        help="also read Megascale hang digests from Cloud Logging this far back (needs --tpu and "
                             "--project); and how old a libtpu log may be (default 1h)")
    inputs.add_argument("--api-timeout", default=None, metavar="DURATION", help="limit for each cloud API call (default 10s)")
    keep = parser.add_argument_group("raw dumps")
    keep.add_argument("--dump-dir", metavar="DIR",
                      help="keep every raw stack dump (py-spy's JSON) and capture here; with --all-workers, each "
                           "worker's report")
    keep.add_argument("--replay", metavar="DIR",
                      help="analyse a --dump-dir capture again instead of live processes")
    keep.add_argument("--stacks", nargs="+", action="append", default=None, metavar="FILE|DIR",
                      help="read stack dumps users already have instead of live processes: `py-spy dump` text "
                           "(also --native, --locals) or faulthandler dumps, a file per process or worker (a file "
                           "may hold several py-spy dumps; a folder reads its files). Give it twice (same file "
                           "names) or two dumps of the same pid, taken some seconds apart, to tell moving from hung (the same file, or a "
                           "copy of it, is one snapshot)")
    keep.add_argument("--merge", nargs="+", metavar="REPORT|DIR",
                      help="merge the JSON hang reports that the workers wrote themselves (GKE: kubectl exec ... "
                           "tpudoctor hang --format json > POD.json) into one slice-wide analysis")
    add_target_flags(parser)
    add_output_flags(parser, HANG_FORMATS)
    add_redact_flag(parser)
    add_plugin_flag(parser)
    add_pod_flags(parser, "tpudoctor hang")
    gate = parser.add_argument_group("exit status")
    gate.add_argument("--fail-on", choices=("warn", "fail"), default=None,
                      help="lowest status that exits 1 (default: fail: a hung job, a process that could not be read)")
    gate.add_argument("--exit-zero", action="store_true", help="always exit 0 unless tpudoctor itself breaks")
    parser.set_defaults(handler=PRODUCT, settings_spec=SETTINGS)



PRODUCT = Product("hang", "tpudoctor.hang.product", "HangRunOptions", HANG_FORMATS, inputs="merge",
                  reads=("stacks", "replay", "log_file"))
