"""``tpudoctor compare A B``: what changed between two profiles (report JSONs or captures), or between two
goodput reports (``tpudoctor goodput --format json``);
``tpudoctor compare --history DIR|gs://bucket/prefix B``: B judged against the last N reports."""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import (
    add_cluster_flag,
    add_gate_flags,
    add_plugin_flag,
    add_redact_flag,
)
from tpudoctor.formats import COMPARE_FORMATS
from tpudoctor.product import Product


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "compare",
        usage="tpudoctor compare [options] A B\n       tpudoctor compare [options] --history DIR|gs://BUCKET/PREFIX B",
        help="what changed between two profiles (comparability, KPIs, op-level diff), or a profile against its history",
        description="Compare two profiles. Each of A and B is a JSON report from `tpudoctor profile analyze "
                    "--format json` or a capture (.xplane.pb, run directory, logdir). Comparability (device kind, "
                    "chips, topology, versions, step method, programs) is checked first. With --history, the one "
                    "profile given is judged against the last N reports in a folder or gs://bucket/prefix. Two "
                    "`tpudoctor goodput --format json` reports are compared figure by figure (ETTR, buckets; "
                    "--fail-on-regression in ETTR percentage points).",
    )
    parser.add_argument("profiles", metavar="PROFILE", nargs="+",
                        help="baseline A and candidate B (report JSON or capture); only the candidate with --history")
    parser.add_argument("--format", choices=COMPARE_FORMATS, default=None,
                        help="output format (default: $TPUDOCTOR_FORMAT, the config file's format, or text)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the comparison to FILE instead of stdout")
    parser.add_argument("--fail-on-regression", metavar="PERCENT", default=None,
                        help="exit 1 when the mean step time (or compile time) got worse by more than PERCENT, e.g. "
                             "5%%; exit 2 when the two captures are not comparable (different device kind or "
                             "topology) unless --force")
    parser.add_argument("--force", action="store_true",
                        help="judge (--fail-on-regression, --history) even when the captures are not comparable")
    parser.add_argument("--history", metavar="DIR|gs://BUCKET/PREFIX", default=None,
                        help="judge the candidate against the profile reports (*.json) saved there: exit 1 on a "
                             "significant regression (median and MAD of the history), 0 otherwise")
    parser.add_argument("--last", metavar="N", type=int, default=None,
                        help="with --history: how many of the most recent reports count (default: 20)")
    add_gate_flags(parser.add_argument_group("exit status"),
                   fail_on_help="lowest status that exits 1 (default: fail: a regression beyond "
                                "--fail-on-regression, or one the --history gate finds)")
    add_redact_flag(parser)
    add_cluster_flag(parser)
    add_plugin_flag(parser)  # the profile rules of a capture analysed here
    parser.set_defaults(handler=PRODUCT, settings_spec={"format": "text", "cluster": None, "disable_plugins": None,
                                                "fail_on": "fail"})


PRODUCT = Product("compare", "tpudoctor.compare", "CompareOptions", COMPARE_FORMATS, inputs="profiles",
                  reads=("history",))
