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
from tpudoctor.exitcodes import ExitCode
from tpudoctor.formats import COMPARE_FORMATS


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
    parser.set_defaults(handler=run, settings_spec={"format": "text", "cluster": None, "disable_plugins": None,
                                                "fail_on": "fail"})


def run(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor.commands.common import gate_for
    from tpudoctor.compare import CompareOptions
    from tpudoctor.compare import run as compare
    from tpudoctor.documents import prepare
    from tpudoctor.findings import exit_code_for
    from tpudoctor.output import check_output, write_text
    from tpudoctor.progress import progress
    from tpudoctor.rendering import render
    from tpudoctor.settings import FLAG

    check_output(args.output, inputs=[*args.profiles, args.history])  # before captures are analysed
    options = CompareOptions(fail_on_regression=args.fail_on_regression, force=bool(args.force), history=args.history,
                             last=args.last, cluster=settings.cluster, cluster_origin=settings.origin("cluster") if settings.cluster else "",
                             cluster_from_flag=settings.source("cluster") == FLAG,
                             disabled_plugins=tuple(settings.disable_plugins or ()), endpoints=settings.endpoints)
    with progress("tpudoctor compare") as update:
        report = compare(args.profiles, options, update)
    fmt = settings.format_for(COMPARE_FORMATS)
    write_text(args.output, render(prepare(report, redact=args.redact), fmt, gate=gate_for(args, settings)), fmt=fmt)
    if report.refusal is not None:  # the comparison is written; the gate's refusal is an error like any other
        raise report.refusal
    return exit_code_for(report, fail_on=settings.fail_on, exit_zero=args.exit_zero)
