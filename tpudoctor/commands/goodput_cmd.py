"""``tpudoctor goodput``: where a job's paid TPU time went, from the logs it already writes.

Layers: ``tpudoctor.goodput`` reads lines into events, rebuilds the timeline and accounts for it (a
document, data only); ``tpudoctor.reports.goodput_<format>`` renders it.
"""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import add_gate_flags, add_plugin_flag, add_redact_flag
from tpudoctor.formats import GOODPUT_FORMATS
from tpudoctor.product import Product

SETTINGS = {"project": None, "zone": None, "since": "24h", "api_timeout": "30s", "format": "text",
            "disable_plugins": None, "fail_on": None}
"""The settings ``goodput`` takes (flag > environment > config file > these defaults); ``--tpu`` and
``--worker`` are this command's flags only."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "goodput",
        help="where a job's TPU time went: ETTR, goodput and badput buckets, restarts, from its logs",
        description="Rebuild a training job's timeline from its logs (files, '-' for stdin, or Cloud Logging for a "
                    "TPU node or a GKE workload) and account for the wall time in ml-goodput-measurement's "
                    "buckets: ETTR, start-up, compilation, checkpoint saves and restores, data waits, steps redone "
                    "after restarts. Reads MaxText, Orbax, TPUEstimator, TF2 Model Garden, torch_xla, Levanter, "
                    "HF Trainer, Keras and XPK lines; --step-pattern for any other.",
    )
    parser.add_argument("logs", nargs="*", metavar="LOG",
                        help="log files (plain or .gz), '-' for stdin; several files are several workers or "
                             "several attempts of the job")
    cloud = parser.add_argument_group("Cloud Logging (instead of LOG files)")
    cloud.add_argument("--tpu", metavar="NAME", help="read the TPU node's workers' entries")
    cloud.add_argument("--gke-cluster", metavar="CLUSTER", help="read a GKE workload's pods' entries (with "
                                                                 "--gke-workload)")
    cloud.add_argument("--gke-namespace", metavar="NAMESPACE", default=None, help="the workload's namespace")
    cloud.add_argument("--gke-workload", metavar="NAME", help="the JobSet / XPK workload name (pods NAME-...)")
    cloud.add_argument("--project", help="Google Cloud project (default: CLOUDSDK_CORE_PROJECT, config)")
    cloud.add_argument("--zone", help="zone of the TPU")
    cloud.add_argument("--worker", help="only this worker's entries (default: every worker)")
    cloud.add_argument("--since", default=None, metavar="DURATION", help="how far back to read (default 24h)")
    cloud.add_argument("--api-timeout", default=None, metavar="DURATION",
                       help="limit for each Cloud Logging call (default 30s)")
    cloud.add_argument("--goodput-job", metavar="JOB_NAME",
                       help="also read ml-goodput-measurement's recorder entries for this job name and say where "
                            "the two accounts differ")
    cloud.add_argument("--goodput-log", metavar="LOG_NAME", default="goodput",
                       help="the recorder's Cloud Logging log name (default: goodput)")
    reading = parser.add_argument_group("reading")
    reading.add_argument("--step-pattern", metavar="REGEX",
                         help="a step line of another framework: a regex with a (?P<step>\\d+) group, and "
                              "optionally (?P<seconds>...)")
    reading.add_argument("--year", type=int, default=None,
                         help="year of glog/absl lines (they print none) when the log has no full date; default: "
                              "a date in the log, else this year")
    reading.add_argument("--tz", default="UTC", metavar="ZONE",
                         help="zone of times that print none (glog/absl, Python logging): UTC (default: TPU VMs and "
                              "GKE log in UTC), local, an offset such as +05:30, or a name such as Europe/Paris")
    gate = parser.add_argument_group("exit status")
    gate.add_argument("--min-ettr", default=None, metavar="RATIO",
                      help="exit 1 when ETTR (productive step time / wall time) is below RATIO, e.g. 0.9 or 90%%; "
                           "exit 2 when the log cannot give an ETTR or its times contradict each other")
    add_gate_flags(gate, fail_on_help="also exit 1 when a finding is at or above this status (default: only "
                                      "--min-ettr sets exit 1; the findings inform)")
    out = parser.add_argument_group("output")
    out.add_argument("--format", choices=GOODPUT_FORMATS, default=None,
                     help="report format (default: $TPUDOCTOR_FORMAT, the config file's format, or text)")
    out.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    out.add_argument("-v", "--verbose", action="store_true", help="show every bucket's note and every finding")
    add_redact_flag(out)
    add_plugin_flag(parser)
    parser.set_defaults(handler=PRODUCT, settings_spec=SETTINGS)


PRODUCT = Product("goodput", "tpudoctor.goodput.product", "GoodputOptions", GOODPUT_FORMATS, inputs="logs",
                  pause_gc=True)  # a long log makes an event, a point and a clock a step line: ~0.6 s a GiB of GC
