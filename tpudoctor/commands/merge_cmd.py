"""``tpudoctor merge``: one report from the reports each worker of a slice wrote itself."""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import (
    add_gate_flags,
    add_output_flags,
    add_plugin_flag,
    add_redact_flag,
)
from tpudoctor.formats import CHECK_FORMATS
from tpudoctor.product import Product

SETTINGS = {"api_timeout": "30s", "format": "text", "fail_on": "fail", "disable_plugins": None}
"""The settings ``merge`` takes (flag > environment > config file > these defaults), as for check."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "merge",
        help="merge per-worker check reports (files, a folder or gs://bucket/prefix/) into one",
        description="Merge the JSON check reports that the workers of a pod slice wrote (a startup script, "
                    "a GKE JobSet or an xpk workload running 'tpudoctor check -o gs://.../{worker}.json') "
                    "into one report: each result with the workers it holds on.",
    )
    parser.add_argument("sources", nargs="+", metavar="REPORT|DIR|gs://BUCKET/PREFIX/",
                        help="report files, folders of them, or a Cloud Storage prefix")
    parser.add_argument("--workers", metavar="LIST",
                        help="the workers the slice has, e.g. 0-15 (default: from the reports' own metadata)")
    parser.add_argument("--tpu", help="the node's name, for the fix commands (default: from the reports)")
    parser.add_argument("--api-timeout", default=None, metavar="DURATION",
                        help="limit for each Cloud Storage call (default 30s)")
    add_gate_flags(parser.add_argument_group("exit status"))
    add_output_flags(parser)
    add_redact_flag(parser)
    add_plugin_flag(parser)
    parser.set_defaults(handler=PRODUCT, settings_spec=SETTINGS)


PRODUCT = Product("merge", "tpudoctor.pod.product", "MergeOptions", CHECK_FORMATS, inputs="sources")
