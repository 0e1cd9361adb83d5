"""``tpudoctor compare`` as a product: two profiles (captures or saved reports), two goodput reports, or one
profile against a history of saved reports. ``run`` returns the ``CompareReport``; a gate that refuses to judge
(not comparable, nothing judged) is the report's ``refusal``, raised once the comparison is written."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tpudoctor.errors import InputError, UsageError
from tpudoctor.profile.compare_report import CompareReport

HISTORY_TIMEOUT_S = 30.0
"""Each Cloud Storage call reading ``--history``."""


@dataclasses.dataclass(frozen=True)
class CompareOptions:
    fail_on_regression: str | None = None
    force: bool = False
    history: str | None = None
    last: int | None = None
    cluster: str | None = None
    cluster_origin: str = ""
    """Where the cluster setting came from, in words (``--cluster``, ``$TPUDOCTOR_CLUSTER``)."""
    cluster_from_flag: bool = False
    disabled_plugins: tuple[str, ...] = ()
    endpoints: Any = None
    """The Google Cloud endpoints a gs:// history is read from (``Settings.endpoints``)."""

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> CompareOptions:
        from tpudoctor.settings import FLAG

        return cls(fail_on_regression=args.fail_on_regression, force=bool(args.force), history=args.history,
                   last=args.last, cluster=settings.cluster,
                   cluster_origin=settings.origin("cluster") if settings.cluster else "",
                   cluster_from_flag=settings.source("cluster") == FLAG,
                   disabled_plugins=tuple(settings.disable_plugins or ()), endpoints=settings.endpoints)


def run(inputs: Sequence[str], options: CompareOptions, progress: Callable[[str], None] | None = None
        ) -> CompareReport:
    """Compare the two ``inputs`` (or judge the one against ``options.history``)."""
    update = progress or (lambda message: None)
    paths = list(inputs)
    if options.history is not None:
        return _history(paths, options, update)
    if options.last is not None:
        raise UsageError("--last counts history reports: give it with --history")
    if len(paths) != 2:
        raise UsageError(f"compare wants two profiles, baseline A and candidate B (got {len(paths)})",
                         hint="or judge one profile against saved reports: tpudoctor compare --history DIR B")
    from tpudoctor.goodput.compare import is_goodput_report

    kinds = [is_goodput_report(p) for p in paths]
    _unused_cluster(paths, options)
    if any(kinds):
        return _goodput(paths, kinds, options)
    from tpudoctor.profile.compare import compare, parse_percent

    threshold = parse_percent(options.fail_on_regression) if options.fail_on_regression is not None else None
    baseline, candidate = _load(paths, options, update)
    result = compare(baseline, candidate, threshold_percent=threshold)
    result["forced"] = bool(options.force)
    gate_refused = threshold is not None and not result["comparable"] and not options.force
    if gate_refused:
        result["regressed"], result["regressed_by"] = False, []
    report = CompareReport(result)
    if gate_refused:  # the comparison is written; the gate's refusal is an error like any other
        reasons = "; ".join(result["comparability"]["reasons"])
        report.refusal = UsageError(f"not comparable: {reasons}. --fail-on-regression cannot judge a regression "
                                    "between different hardware", hint="--force judges anyway")
    return report


def _goodput(paths: list[str], kinds: list[bool], options: CompareOptions) -> CompareReport:
    """Two ``tpudoctor goodput --format json`` reports: --fail-on-regression is in ETTR percentage points."""
    from tpudoctor.goodput.compare import compare_goodput, load_goodput_document
    from tpudoctor.profile.compare import parse_percent

    if not all(kinds):
        raise UsageError("compare reads two reports of the same kind: one of these is a goodput report and the "
                         "other is not", hint="make both with: tpudoctor goodput LOG --format json -o report.json")
    threshold = parse_percent(options.fail_on_regression) if options.fail_on_regression is not None else None
    baseline, candidate = (load_goodput_document(p) for p in paths)
    result = compare_goodput(baseline, candidate, threshold_points=threshold)
    report = CompareReport(result)
    if threshold is not None and not result["comparable"] and not options.force:
        report.refusal = UsageError(f"not comparable: {'; '.join(result['comparability']['reasons'])}. "
                                    "--fail-on-regression cannot judge ETTR between them", hint="--force judges anyway")
    return report


def _history(paths: list[str], options: CompareOptions, update: Callable[[str], None]) -> CompareReport:
    from tpudoctor.gcp.session import Session
    from tpudoctor.profile.comparability import compare_documents
    from tpudoctor.profile.compare_report import PROFILE_HISTORY
    from tpudoctor.profile.history import DEFAULT_LAST_N, MIN_HISTORY, judge_history, read_history

    history = str(options.history)
    if len(paths) != 1:
        raise UsageError(f"with --history, give only the candidate profile (got {len(paths)})",
                         hint="tpudoctor compare --history DIR|gs://bucket/prefix CANDIDATE")
    if options.fail_on_regression is not None:
        raise UsageError("--fail-on-regression compares two profiles; the history gate decides by median and MAD",
                         hint="drop --fail-on-regression: with --history a significant regression exits 1")
    last_n = DEFAULT_LAST_N if options.last is None else options.last
    if last_n < 1:
        raise UsageError(f"--last must be at least 1 (got {last_n})")
    _unused_cluster(paths, options)
    (candidate,) = _load(paths, options, update)
    update(f"reading the history in {history}")
    entries = read_history(history, last_n=last_n, exclude=paths,
                           session=Session(options.endpoints, timeout_s=HISTORY_TIMEOUT_S, project=None))
    if len(entries) < MIN_HISTORY:
        raise InputError(f"too little history in {history}: {len(entries)} report(s), at least {MIN_HISTORY} "
                         "are needed to tell a regression from run-to-run noise",
                         hint="save a report of every run: tpudoctor profile analyze CAPTURE --format json -o "
                              f"{history.rstrip('/')}/<run>.json")
    comparability = compare_documents(entries[-1].document, candidate)
    gate = judge_history([e.document for e in entries], candidate, last_n=last_n,
                         history_names=[e.name for e in entries])
    result = {"kind": PROFILE_HISTORY, "history": history,
              "candidate": {"source": candidate.get("source"), "verdict": candidate.get("verdict")},
              "comparable": comparability.comparable, "comparability": comparability.to_dict(),
              "forced": bool(options.force), "gate": gate.to_dict()}
    report = CompareReport(result)
    if not comparability.comparable and not options.force:
        report.refusal = UsageError("the candidate is not comparable with the latest history report: "
                                    + "; ".join(comparability.reasons), hint="--force judges anyway")
    elif gate.verdict == "not_judged":
        report.refusal = InputError("no gated KPI could be judged: "
                                    + "; ".join(f"{j.kpi}: {j.reason}" for j in gate.kpis if j.gated))
    return report


def _unused_cluster(paths: list[str], options: CompareOptions) -> None:
    """The cluster analyses captures; saved reports are read here. Refused as a flag, said as a note when it
    comes from the environment or the config file (a standing choice, not this run's)."""
    if not options.cluster or not all(_is_report_file(p) for p in paths):
        return
    if options.cluster_from_flag:
        raise UsageError(f"{options.cluster_origin} analyses captures on a Dask cluster, and {' and '.join(paths)} "
                         f"{'is a saved report' if len(paths) == 1 else 'are saved reports'}: there is nothing "
                         "to analyse", hint="drop --cluster, or give the captures themselves")
    sys.stderr.write(f"tpudoctor compare: note: {options.cluster_origin} is not used: saved reports are read here, "
                     "not analysed\n")


def _is_report_file(path: str) -> bool:
    """What ``load_document`` reads as a saved report rather than a capture to analyse."""
    from pathlib import Path

    return Path(path).is_file() and Path(path).suffix == ".json"


def _load(paths: list[str], options: CompareOptions, update: Callable[[str], None]) -> list[dict]:
    from tpudoctor.profile.compare import load_document

    documents = []
    for path in paths:  # captures (not report JSONs) are analysed first
        update(f"reading {path}")
        documents.append(load_document(path, cluster=options.cluster, on_progress=update,
                                       disabled_plugins=options.disabled_plugins))
    return documents
