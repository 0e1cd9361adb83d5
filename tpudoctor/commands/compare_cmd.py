"""``tpudoctor compare A B``: what changed between two profiles (report JSONs or captures)."""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import add_cluster_flag, resolve_cluster
from tpudoctor.exitcodes import ExitCode

COMPARE_FORMATS = ("text", "json", "markdown")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "compare",
        help="KPI deltas between two profiles (baseline A, candidate B): step time, input, idle, compiles, top ops",
        description="Compare two profiles. Each of A and B is a JSON report from `tpudoctor profile analyze "
                    "--format json` or a capture (.xplane.pb, run directory, logdir).",
    )
    parser.add_argument("baseline", metavar="A", help="baseline: report JSON or capture")
    parser.add_argument("candidate", metavar="B", help="candidate: report JSON or capture")
    parser.add_argument("--format", choices=COMPARE_FORMATS, default=None, help="output format (default: text)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the comparison to FILE instead of stdout")
    parser.add_argument("--fail-on-regression", metavar="PERCENT", default=None,
                        help="exit 1 when the mean step time (or compile time) got worse by more than PERCENT, e.g. 5%%")
    parser.add_argument("--redact", action="store_true",
                        help="replace IPs, bucket names, projects and e-mails before sharing the comparison")
    add_cluster_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> ExitCode:
    from tpudoctor.formats import default_format
    from tpudoctor.output import write_text
    from tpudoctor.profile.compare import compare, load_document, parse_percent
    from tpudoctor.reports.profile_compare import render

    threshold = parse_percent(args.fail_on_regression) if args.fail_on_regression is not None else None
    from tpudoctor.progress import progress

    cluster = resolve_cluster(args.cluster)
    with progress("tpudoctor compare") as update:  # captures (not report JSONs) are analysed first
        update(f"reading {args.baseline}")
        baseline = load_document(args.baseline, cluster=cluster, on_progress=update)
        update(f"reading {args.candidate}")
        candidate = load_document(args.candidate, cluster=cluster, on_progress=update)
    result = compare(baseline, candidate, threshold_percent=threshold)
    fmt = args.format or default_format(COMPARE_FORMATS)
    text = render(result, fmt)
    if args.redact:
        from tpudoctor.redact import redact_rendered

        text = redact_rendered(text, fmt)
    write_text(args.output, text)
    return ExitCode.FINDINGS if result["regressed"] else ExitCode.OK
