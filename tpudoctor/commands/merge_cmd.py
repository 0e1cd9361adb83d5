"""``tpudoctor merge``: one report from the reports each worker of a slice wrote itself."""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import add_output_flags, add_plugin_flag, add_redact_flag
from tpudoctor.exitcodes import ExitCode

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
    gate = parser.add_argument_group("exit status")
    gate.add_argument("--fail-on", choices=("warn", "fail"), default=None, help="lowest status that exits 1 (default: fail)")
    gate.add_argument("--exit-zero", action="store_true", help="always exit 0 unless tpudoctor itself breaks")
    add_output_flags(parser)
    add_redact_flag(parser)
    add_plugin_flag(parser)
    parser.set_defaults(handler=run, settings_spec=SETTINGS)


def run(args: argparse.Namespace, settings) -> ExitCode:
    import sys

    from tpudoctor.commands.common import gate_for, session_for
    from tpudoctor.documents import merged_document
    from tpudoctor.findings import exit_code_for
    from tpudoctor.formats import CHECK_FORMATS
    from tpudoctor.output import check_output, write_text
    from tpudoctor.pod.merge import merge_outcomes, slice_registry
    from tpudoctor.pod.report_store import read_reports
    from tpudoctor.pod.worker_ids import parse_worker_spec
    from tpudoctor.progress import progress
    from tpudoctor.rendering import render

    api_timeout_s, fail_on = settings.api_timeout_s, settings.fail_on
    expected = parse_worker_spec(args.workers) if args.workers else None
    if args.tpu:  # it goes into the fix commands a person pastes
        from tpudoctor.resource_names import check_resource_name

        check_resource_name("tpu", args.tpu, origin="--tpu")
    session = session_for(settings, timeout_s=api_timeout_s)
    check_output(args.output, inputs=args.sources, session=session)
    with progress("tpudoctor merge") as update:
        update(f"reading {len(args.sources)} source(s)")
        skipped: list[str] = []
        outcomes = read_reports(args.sources, session=session, skipped=skipped)
        if not any(o.report is not None for o in outcomes):  # nothing to merge: the input is wrong, not the slice
            from tpudoctor.errors import InputError

            reasons = skipped + [o.problem.message for o in outcomes if o.problem is not None]
            raise InputError(f"none of the {len(outcomes) + len(skipped)} report(s) could be read: {reasons[0]}"
                             + (f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""),
                             hint="each worker writes one with: tpudoctor check --format json -o DIR/{worker}.json")
        update(f"merging {len(outcomes)} report(s)")
        merged = merge_outcomes(outcomes, expected=expected, source=", ".join(args.sources),
                                registry=slice_registry(settings.disable_plugins), skipped=skipped)
    for why in skipped:
        sys.stderr.write(f"tpudoctor merge: left out {why}\n")
    if args.tpu:
        merged.report.target.tpu = args.tpu
    fmt = settings.format_for(CHECK_FORMATS)
    color = args.output in (None, "-") and sys.stdout.isatty()
    write_text(args.output, render(merged_document(merged, redact=args.redact), fmt, verbose=args.verbose,
                                                     color=color, gate=gate_for(args, settings)), fmt=fmt, session=session)
    return exit_code_for(merged.report, fail_on=fail_on, exit_zero=args.exit_zero)
