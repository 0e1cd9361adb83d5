"""``tpudoctor compare A B``: what changed between two profiles (report JSONs or captures), or between two
goodput reports (``tpudoctor goodput --format json``);
``tpudoctor compare --history DIR|gs://bucket/prefix B``: B judged against the last N reports."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tpudoctor.commands.common import (
    add_cluster_flag,
    add_gate_flags,
    add_plugin_flag,
    add_redact_flag,
    session_for,
)
from tpudoctor.errors import UsageError
from tpudoctor.exitcodes import ExitCode
from tpudoctor.formats import COMPARE_FORMATS

if TYPE_CHECKING:
    from tpudoctor.profile.compare_report import CompareReport

HISTORY_TIMEOUT_S = 30.0  # each Cloud Storage call reading --history


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
    from tpudoctor.findings import exit_code_for
    from tpudoctor.output import check_output

    check_output(args.output, inputs=[*args.profiles, args.history])  # before captures are analysed
    if args.history is not None:
        return run_history(args, settings)
    if args.last is not None:
        raise UsageError("--last counts history reports: give it with --history")
    if len(args.profiles) != 2:
        raise UsageError(f"compare wants two profiles, baseline A and candidate B (got {len(args.profiles)})",
                         hint="or judge one profile against saved reports: tpudoctor compare --history DIR B")
    from tpudoctor.goodput.compare import is_goodput_report

    kinds = [is_goodput_report(p) for p in args.profiles]
    _unused_cluster(args.profiles, settings)
    if any(kinds):
        return run_goodput(args, kinds, settings)
    from tpudoctor.profile.compare import compare, parse_percent

    threshold = parse_percent(args.fail_on_regression) if args.fail_on_regression is not None else None
    baseline, candidate = _load(args.profiles, settings)
    result = compare(baseline, candidate, threshold_percent=threshold)
    result["forced"] = bool(args.force)
    gate_refused = threshold is not None and not result["comparable"] and not args.force
    if gate_refused:
        result["regressed"], result["regressed_by"] = False, []
    report = _write(args, result, settings)
    if gate_refused:  # the comparison is written; the gate's refusal is an error like any other
        reasons = "; ".join(result["comparability"]["reasons"])
        raise UsageError(f"not comparable: {reasons}. --fail-on-regression cannot judge a regression between "
                         "different hardware", hint="--force judges anyway")
    return exit_code_for(report, fail_on=settings.fail_on, exit_zero=args.exit_zero)


def run_goodput(args: argparse.Namespace, kinds: list[bool], settings) -> ExitCode:
    """Two ``tpudoctor goodput --format json`` reports: --fail-on-regression is in ETTR percentage points."""
    from tpudoctor.findings import exit_code_for
    from tpudoctor.goodput.compare import compare_goodput, load_goodput_document
    from tpudoctor.profile.compare import parse_percent

    if not all(kinds):
        raise UsageError("compare reads two reports of the same kind: one of these is a goodput report and the "
                         "other is not", hint="make both with: tpudoctor goodput LOG --format json -o report.json")
    threshold = parse_percent(args.fail_on_regression) if args.fail_on_regression is not None else None
    baseline, candidate = (load_goodput_document(p) for p in args.profiles)
    result = compare_goodput(baseline, candidate, threshold_points=threshold)
    report = _write(args, result, settings)
    if threshold is not None and not result["comparable"] and not args.force:
        raise UsageError(f"not comparable: {'; '.join(result['comparability']['reasons'])}. --fail-on-regression "
                         "cannot judge ETTR between them", hint="--force judges anyway")
    return exit_code_for(report, fail_on=settings.fail_on, exit_zero=args.exit_zero)


def run_history(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor.errors import InputError
    from tpudoctor.findings import exit_code_for
    from tpudoctor.profile.comparability import compare_documents
    from tpudoctor.profile.compare_report import PROFILE_HISTORY
    from tpudoctor.profile.history import DEFAULT_LAST_N, MIN_HISTORY, judge_history, read_history

    if len(args.profiles) != 1:
        raise UsageError(f"with --history, give only the candidate profile (got {len(args.profiles)})",
                         hint="tpudoctor compare --history DIR|gs://bucket/prefix CANDIDATE")
    if args.fail_on_regression is not None:
        raise UsageError("--fail-on-regression compares two profiles; the history gate decides by median and MAD",
                         hint="drop --fail-on-regression: with --history a significant regression exits 1")
    last_n = DEFAULT_LAST_N if args.last is None else args.last
    if last_n < 1:
        raise UsageError(f"--last must be at least 1 (got {last_n})")
    _unused_cluster(args.profiles, settings)
    (candidate,) = _load(args.profiles, settings)
    from tpudoctor.progress import progress

    with progress("tpudoctor compare --history") as update:
        update(f"reading the history in {args.history}")
        entries = read_history(args.history, last_n=last_n, exclude=args.profiles,
                               session=session_for(settings, timeout_s=HISTORY_TIMEOUT_S))
    if len(entries) < MIN_HISTORY:
        raise InputError(f"too little history in {args.history}: {len(entries)} report(s), at least {MIN_HISTORY} "
                         "are needed to tell a regression from run-to-run noise",
                         hint="save a report of every run: tpudoctor profile analyze CAPTURE --format json -o "
                              f"{args.history.rstrip('/')}/<run>.json")
    comparability = compare_documents(entries[-1].document, candidate)
    gate = judge_history([e.document for e in entries], candidate, last_n=last_n,
                         history_names=[e.name for e in entries])
    result = {"kind": PROFILE_HISTORY, "history": args.history,
              "candidate": {"source": candidate.get("source"), "verdict": candidate.get("verdict")},
              "comparable": comparability.comparable, "comparability": comparability.to_dict(),
              "forced": bool(args.force), "gate": gate.to_dict()}
    report = _write(args, result, settings)
    if not comparability.comparable and not args.force:
        raise UsageError("the candidate is not comparable with the latest history report: "
                         + "; ".join(comparability.reasons), hint="--force judges anyway")
    if gate.verdict == "not_judged":
        raise InputError("no gated KPI could be judged: "
                         + "; ".join(f"{j.kpi}: {j.reason}" for j in gate.kpis if j.gated))
    return exit_code_for(report, fail_on=settings.fail_on, exit_zero=args.exit_zero)


def _unused_cluster(paths: list[str], settings) -> None:
    """The cluster analyses captures; saved reports are read here. Refused as a flag, said as a note when it
    comes from the environment or the config file (a standing choice, not this run's)."""
    from tpudoctor.settings import FLAG

    if not settings.cluster or not all(_is_report_file(p) for p in paths):
        return
    origin = settings.origin("cluster")
    if settings.source("cluster") == FLAG:
        raise UsageError(f"{origin} analyses captures on a Dask cluster, and {' and '.join(paths)} "
                         f"{'is a saved report' if len(paths) == 1 else 'are saved reports'}: there is nothing "
                         "to analyse", hint="drop --cluster, or give the captures themselves")
    import sys

    sys.stderr.write(f"tpudoctor compare: note: {origin} is not used: saved reports are read here, not analysed\n")


def _is_report_file(path: str) -> bool:
    """What ``load_document`` reads as a saved report rather than a capture to analyse."""
    from pathlib import Path

    return Path(path).is_file() and Path(path).suffix == ".json"


def _load(paths: list[str], settings) -> list[dict]:
    from tpudoctor.profile.compare import load_document
    from tpudoctor.progress import progress

    documents = []
    with progress("tpudoctor compare") as update:  # captures (not report JSONs) are analysed first
        for path in paths:
            update(f"reading {path}")
            documents.append(load_document(path, cluster=settings.cluster, on_progress=update,
                                           disabled_plugins=settings.disable_plugins))
    return documents


def _write(args: argparse.Namespace, result: dict, settings) -> CompareReport:
    """Write the comparison ``result`` (prepared once, then rendered); its report, for the exit status."""
    from tpudoctor.commands.common import gate_for
    from tpudoctor.documents import prepare
    from tpudoctor.output import write_text
    from tpudoctor.profile.compare_report import CompareReport
    from tpudoctor.rendering import render

    report = CompareReport(result)
    fmt = settings.format_for(COMPARE_FORMATS)
    write_text(args.output, render(prepare(report, redact=args.redact), fmt, gate=gate_for(args, settings)), fmt=fmt)
    return report
