"""The profile pipeline: a per-host MAP in the process that loads the host, then one COMBINE.

    import tpudoctor.profile
    report = tpudoctor.profile.analyze("gs://bucket/logdir")    # ProfileReport
    report.verdict, report.findings, report.to_dict()

``analyze_host(source)`` loads one host file, runs every analysis on its events and returns a small
``HostResult`` (figures and short tables, no events): the events never leave the process that
decoded them. ``combine(host_results)`` evaluates the profile rules on each host, merges their
findings across hosts (a finding's scope is the hosts where it holds), names the straggler and the
verdict, and returns the ``ProfileReport`` that the CLI, ``compare`` and every renderer consume.
This is xprof's OpStats map/reduce; ``analyze_host`` is a plain module-level function so that any
executor (``tpudoctor.profile.executor``: local processes, or a Dask cluster) can run the map.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any

from tpudoctor.captures.capture_files import HostFile, hostname_of, resolve
from tpudoctor.captures.xspace.columns import LoadOptions
from tpudoctor.errors import InputError
from tpudoctor.findings import Finding, Status
from tpudoctor.profile.executor import HostTask
from tpudoctor.profile.host_result import (
    BreakdownFigures,
    CompileFigures,
    DeviceFigures,
    HostOpsFigures,
    HostResult,
    StepFigures,
)
from tpudoctor.profile.report import ProfileReport

MAX_STEP_RECORDS = 500
MAX_PROGRAMS = 50


def analyze_host(source: HostFile | str, *, options: LoadOptions | None = None) -> HostResult:
    """MAP: load one host file (a ``HostFile`` or a path/``gs://`` URI of one ``.xplane.pb``) and
    analyse it here. ``options`` default to ``LoadOptions.for_analysis()`` (only the stats the
    analyses read). Raises ``InputError`` when the file cannot be read or decoded."""
    host_file = source if isinstance(source, HostFile) else HostFile(hostname_of(str(source)), str(source))
    with cyclic_gc_paused():
        from tpudoctor.profile.capture import load_host

        return host_result(load_host(host_file, options or LoadOptions.for_analysis()))


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while one host is loaded and analysed (and numpy and
    pandas imported, the first time): the map makes millions of small objects that reference
    counting frees, and the collector's passes over them cost time, not memory
    (``benchmarks/bench_profile_load.py``). On again afterwards, if it was on."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _analyze_host_file(host_file: HostFile, options: LoadOptions) -> HostResult:
    return analyze_host(host_file, options=options)


ANALYZE_HOST = HostTask(_analyze_host_file, key="analyze-host", noun="analysis", verb="analysed",
                        preload=("tpudoctor.profile.pipeline", "tpudoctor.profile.analysis"))
"""The per-host MAP as a task any executor runs (``tpudoctor.profile.executor``)."""


def host_result(host) -> HostResult:
    """The ``HostResult`` of a loaded ``HostProfile`` (its events stay with the caller)."""
    from tpudoctor.profile.analysis.device_op_rows import sharing_device_ops

    with sharing_device_ops(host):  # the device ops are selected once for all the analyses below
        return _host_result(host)


def _host_result(host) -> HostResult:
    from tpudoctor.profile.analysis import analyze_loaded
    from tpudoctor.profile.analysis.collectives import to_tables
    from tpudoctor.profile.analysis.evidence import evidence_of
    from tpudoctor.profile.analysis.roofline import analyze_roofline
    from tpudoctor.profile.summary import summarize_host

    a = analyze_loaded(host)
    from tpudoctor.profile.comparability import capture_versions
    from tpudoctor.profile.op_diff import op_table

    roofline_frame = analyze_roofline(host)
    roofline = _roofline_data(roofline_frame)
    ops = op_table(host, roofline_frame)
    inp, rc, ho, dev = a.input, a.recompilation, a.host_ops, a.device
    percent = _clean(inp.percent)
    return HostResult(
        host=host.hostname, framework=a.framework, device_kind=a.device_kind, window_ms=_num(a.window_ms) or 0.0,
        time_origin_ns=int(host.time_origin_ns),
        steps=StepFigures(method=a.steps.method, count=a.steps.count, program=a.steps.program,
                          reason=a.steps.reason, stats=_clean(a.step_stats),
                          micro_benchmark=a.steps.micro_benchmark, loop=_clean(a.steps.loop)),
        breakdown=BreakdownFigures(
            model=inp.model, classification=inp.classification, percent=percent,
            per_step=records(inp.per_step, MAX_STEP_RECORDS), input_stages=records(inp.input_stages, 10),
            idle_gaps=records(inp.gaps, 50), device_timeline_span_ms=_num(inp.gaps.attrs.get("timeline_span_ms"))),
        compile=CompileFigures(
            compile_count=int(rc.total_compile_count), compile_ms=_num(rc.total_compile_ms) or 0.0,
            share_of_capture_percent=_num(rc.share_of_capture_percent) or 0.0,
            program_cache_misses=int(rc.program_cache_misses), programs_in_metadata=int(rc.programs_in_metadata),
            tf_tracing_count_max=rc.tf_tracing_count_max, functions=records(rc.functions, 50)),
        host_ops=HostOpsFigures(
            device_op_ms=_num(ho.device_busy_ms) or 0.0, host_offload_device_ms=_num(ho.host_offload_device_ms) or 0.0,
            host_offload_share_of_device_percent=_num(ho.host_offload_share_of_device_percent) or 0.0,
            outside_compilation_share_of_device_percent=_num(ho.outside_compilation_share_of_device_percent) or 0.0,
            callback_ms=_num(ho.callback_ms) or 0.0, host_transfer_ms=_num(ho.host_transfer_ms) or 0.0,
            eager_ms=_num(ho.eager_ms) or 0.0, table=records(ho.table, 40)),
        device=DeviceFigures(
            duty_cycle_percent=_num(dev.duty_cycle_percent) or 0.0, idle_percent=_num(dev.idle_percent) or 0.0,
            mxu_utilization_percent=_mxu(dev.mxu_utilization_percent, roofline),
            hbm_utilization_percent=_num(dev.hbm_utilization_percent),
            flops_utilization_percent=(_significant(roofline["program"]["compute_efficiency_percent"])
                                       if roofline else _num(dev.flops_utilization_percent)),
            top_ops=records(dev.top_ops, 20), categories=records(dev.categories, 20), per_core=records(dev.per_core, 64),
            programs=records(dev.programs, MAX_PROGRAMS), hlo_op_ms=_num(dev.kind_ms.get("hlo_op_ms")) or 0.0,
            runtime_copy_ms=_num(dev.kind_ms.get("runtime_copy_ms")) or 0.0,
            other_op_ms=_num(dev.kind_ms.get("other_ms")) or 0.0),
        summary=summarize_host(host),
        plane_names=[str(n) for n in host.planes["plane_name"]],
        has_device_planes=bool(host.planes["is_device"].any()),
        errors=list(host.errors), warnings=list(host.warnings),
        evidence=evidence_of(a), versions=capture_versions(host),
        tables={OP_TABLE: records(ops, MAX_OPS_PER_HOST),
                **(to_tables(a.collectives) if a.collectives is not None else {}),
                **_whatif_tables(host, a)},
        roofline=roofline,
    )


def _whatif_tables(host, a) -> dict[str, list[dict[str, Any]]]:
    """The straggler what-if's map part (``analysis.whatif``): each collective's and step's span."""
    if a.collectives is None or not a.collectives.has_collectives:
        return {}
    from tpudoctor.profile.analysis.whatif_tables import whatif_tables

    return whatif_tables(host, a.steps)


MAX_OPS_IN_REPORT = 200
"""Rows of the report's per-op table (heaviest first): what compare's op diff of a saved report reads."""


def combined_op_table(hosts: Iterable[HostResult]) -> dict[str, Any] | None:
    """All hosts' per-op tables as one (``combine_op_tables``), top ``MAX_OPS_IN_REPORT`` by time."""
    import pandas as pd

    from tpudoctor.profile.op_diff import combine_op_tables

    tables = [pd.DataFrame.from_records(h.tables[OP_TABLE]) for h in hosts if h.tables.get(OP_TABLE)]
    if not tables:
        return None
    table = combine_op_tables(tables)
    return {"ops": records(table, MAX_OPS_IN_REPORT), "ops_total": len(table), "max_ops": MAX_OPS_IN_REPORT}


OP_TABLE = "ops"
MAX_OPS_PER_HOST = 2000
"""Rows of a host's per-op table (heaviest first) carried to the combine, for compare's op diff."""
MAX_ROOFLINE_OPS_PER_HOST = 2000
"""Ops of one host's roofline carried to the combine (heaviest first): the combine sums these."""


def _mxu(stat: float | None, roofline: dict[str, Any] | None) -> float | None:
    """The device plane's MXU utilisation; a 0 there while the roofline counts FLOPs is a figure the
    runtime did not fill in (the v6e capture): unknown, not 0 %."""
    if stat is not None and stat == 0 and roofline and (roofline["program"].get("flops") or 0) > 0:
        return None
    return _num(stat)


def _significant(value: float | None, digits: int = 4) -> float | None:
    """Rounded to ``digits`` significant figures (an MFU of 0.00049 % is not 0)."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}")


def _roofline_data(roofline) -> dict[str, Any] | None:
    return None if roofline is None else roofline.to_dict(max_ops=MAX_ROOFLINE_OPS_PER_HOST)


def combine(host_results: Iterable[HostResult], *, source: str = "", run: str | None = None,
            runs_available: Iterable[str] = (), failed_hosts: Mapping[str, str] | None = None,
            rules: Mapping[str, type] | None = None, disabled_plugins: Collection[str] = ()) -> ProfileReport:
    """COMBINE: rules on every host, findings merged across hosts, straggler and verdict.

    ``rules`` (rule id -> ``ProfileRule`` class) defaults to the registered ones, plugins included less
    ``disabled_plugins`` (the run's ``disable_plugins`` setting). The rules run here, in the process that
    combines: the per-host map (worker processes, Dask workers) never loads them."""
    from tpudoctor.profile.analysis.hosts import (
        CROSS_HOST_TABLE,
        cross_host_analysis,
        cross_host_rows,
    )
    from tpudoctor.profile.confidence import verdict_confidence, with_confidence
    from tpudoctor.profile.rule import evaluate_rule
    from tpudoctor.profile.summary import shifted
    from tpudoctor.profile.verdict import cap_findings, judge

    hosts = {h.host: h for h in sorted(host_results, key=lambda h: h.host)}
    if not hosts:
        raise InputError(f"no host of {source or 'the capture'} could be analysed"
                         + (": " + "; ".join(f"{k}: {v}" for k, v in (failed_hosts or {}).items())
                            if failed_hosts else ""))
    if rules is None:
        from tpudoctor.families import load_rules

        rules = load_rules("profile-rules", disabled=disabled_plugins)
    origin_ns = min(h.time_origin_ns for h in hosts.values())
    # one time origin for all hosts, as a loaded capture has (copies: the inputs stay as mapped)
    hosts = {name: dataclasses.replace(h, summary=shifted(h.summary, (h.time_origin_ns - origin_ns) * 1000))
             if h.summary is not None else h for name, h in hosts.items()}
    # cross-host first: the collectives and straggler rules read each host's row of it
    cross_host = cross_host_analysis(hosts)
    rows = cross_host_rows(cross_host)
    hosts = {name: dataclasses.replace(h, tables={**h.tables, CROSS_HOST_TABLE: [rows[name]]}) if name in rows else h
             for name, h in hosts.items()}
    hosts, analyses = _straggler_whatif(hosts)
    results = {name: with_confidence([evaluate_rule(rule, h) for rule in rules.values()], h, rules)
               for name, h in hosts.items()}
    verdicts, confidences = {}, {}
    for name, h in hosts.items():
        judgement = judge(results[name], rules)
        verdicts[name] = (judgement.verdict, judgement.reason)
        confidences[name] = verdict_confidence(judgement.verdict, judgement.reason, results[name], h, rules)
        # too little evidence caps every result; otherwise each one that is not sure of itself
        results[name] = cap_findings(results[name], only_unsure=judgement.enough_evidence)
    roofline, roofline_notes = combined_roofline(hosts.values())
    return ProfileReport(
        source=source, run=run, runs_available=list(runs_available), time_origin_ns=origin_ns, hosts=hosts,
        results=results, verdicts=verdicts, verdict_confidences=confidences, rules=dict(rules), cross_host=cross_host,
        failed_hosts=dict(failed_hosts or {}), notes=_notes(hosts.values()) + roofline_notes,
        roofline=roofline, op_table=combined_op_table(hosts.values()), analyses=analyses,
    )


def _straggler_whatif(hosts: dict[str, HostResult]) -> tuple[dict[str, HostResult], dict[str, Any]]:
    """The straggler what-if of a multi-host capture (``analysis.whatif``): each host's row of it in its
    tables (what the ``straggler-cost`` rule reads), and the report's ``analyses`` section (none for one host)."""
    if len(hosts) < 2:
        return hosts, {}
    from tpudoctor.profile.analysis.whatif import (
        ROWS_TABLE,
        host_rows,
        straggler_whatif,
        time_classes,
    )

    result = straggler_whatif({name: h.tables for name, h in hosts.items()})
    time_classes(result, {name: h.breakdown.per_step for name, h in hosts.items()})
    rows = host_rows(result)
    hosts = {name: dataclasses.replace(h, tables={**h.tables, ROWS_TABLE: [rows[name]]}) if name in rows else h
             for name, h in hosts.items()}
    return hosts, {"straggler_whatif": result.to_dict()}


MAX_ROOFLINE_OPS_IN_REPORT = 200
"""Ops in the report's roofline (heaviest first); ``ops_total`` says how many there were."""


def combined_roofline(hosts: Iterable[HostResult]) -> tuple[dict[str, Any] | None, list[str]]:
    """The hosts' rooflines summed (``combine_rooflines``), as plain data, and notes on what could
    not be combined."""
    parts = [h.roofline for h in hosts if h.roofline]
    if not parts:
        return None, []
    if len(parts) == 1:
        one = parts[0]
        return {**one, "ops": one["ops"][:MAX_ROOFLINE_OPS_IN_REPORT]}, []
    from tpudoctor.profile.analysis.roofline import Roofline, combine_rooflines

    try:
        combined = combine_rooflines([Roofline.from_dict(p) for p in parts])
    except ValueError as exc:  # hosts of different device kinds
        return None, [f"roofline not combined: {exc}"]
    return combined.to_dict(max_ops=MAX_ROOFLINE_OPS_IN_REPORT), []


def analyze(path: str | os.PathLike[str], *, run: str | None = None, max_workers: int | None = None,
            options: LoadOptions | None = None, rules: Mapping[str, type] | None = None,
            on_progress: Callable[[str], None] | None = None, cluster: str | None = None,
            cluster_timeout_s: float | None = None, disabled_plugins: Collection[str] = ()) -> ProfileReport:
    """Analyse a capture (a ``.xplane.pb``, a run directory or a logdir; local or ``gs://``).

    One host is analysed in this process; several run the map in worker processes (at most
    ``max_workers``), so that only their small results come back. With ``cluster`` (a Dask
    scheduler address such as ``tcp://10.0.0.2:8786``) the map runs on that cluster's workers,
    which read the host files themselves; ``cluster_timeout_s`` bounds the connection. A host that
    cannot be read goes to ``failed_hosts``; ``InputError`` when none can. ``options``: as for
    ``analyze_host``; ``rules`` and ``disabled_plugins``: as for ``combine``."""
    options = options or LoadOptions.for_analysis()
    resolved = resolve(path, run)
    results: list[HostResult] = []
    failed: dict[str, str] = {}
    if len(resolved.hosts) == 1 and not cluster:  # here, and its errors as they are: no pool for one host
        mapped = iter([(resolved.hosts[0], analyze_host(resolved.hosts[0], options=options))])
    else:
        from tpudoctor.profile.executor import executor_for

        if cluster and on_progress is not None:
            on_progress(f"connecting to the Dask scheduler at {cluster}")
        executor = executor_for(resolved.hosts, cluster=cluster, max_workers=max_workers,
                                cluster_timeout_s=cluster_timeout_s)
        mapped = executor.map(ANALYZE_HOST, resolved.hosts, options)
    total = len(resolved.hosts)
    for done, (host_file, outcome) in enumerate(mapped, start=1):
        if on_progress is not None:
            on_progress(f"analysed {host_file.hostname} ({done}/{total} hosts)")
        if isinstance(outcome, HostResult):
            results.append(outcome)
        else:
            failed[host_file.hostname] = outcome
    if not results:
        details = "; ".join(f"{name}: {message}" for name, message in failed.items())
        raise InputError(f"no host of {resolved.source} could be loaded: {details}")
    return combine(results, source=resolved.source, run=resolved.run, runs_available=resolved.runs_available,
                   failed_hosts=failed, rules=rules, disabled_plugins=disabled_plugins)


def analyze_capture(capture, *, rules: Mapping[str, type] | None = None,
                    disabled_plugins: Collection[str] = ()) -> ProfileReport:
    """The same report for a capture already loaded with ``tpudoctor.profile.load`` (its hosts' events
    are in this process already, so the map runs here)."""
    return combine([host_result(h) for h in capture.hosts.values()], source=str(capture.source), run=capture.run,
                   runs_available=capture.runs_available, failed_hosts=capture.failed_hosts, rules=rules,
                   disabled_plugins=disabled_plugins)


def _notes(hosts: Iterable[HostResult]) -> list[str]:
    from tpudoctor.captures.xspace.columns import DEVICE_PLANE_PREFIXES

    hosts = list(hosts)
    notes = []
    if not any(h.has_device_planes for h in hosts):
        names = sorted({name for h in hosts for name in h.plane_names})
        notes.append(
            "no device planes (" + ", ".join(prefix + "*" for prefix in DEVICE_PLANE_PREFIXES) + ") in this capture; "
            f"it has only: {', '.join(names)}. Device-time analyses do not apply: the capture was taken "
            "without device tracing, on a machine without accelerators, or the TPU runtime wrote no trace."
        )
    for h in hosts:
        if h.summary is not None and h.summary.n_events == 0:
            notes.append(f"host {h.host}: no events at all in any plane")
        notes.extend(f"host {h.host}: profiler error: {m}" for m in h.errors)
        notes.extend(f"host {h.host}: profiler warning: {m}" for m in h.warnings)
    return notes


def fired(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.status is not Status.PASS]


def records(frame, limit: int) -> list[dict[str, Any]]:
    return [_clean(r) for r in frame.head(limit).to_dict(orient="records")]


def _num(v):
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) or math.isinf(v) else round(v, 4)


def _clean(obj):
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if hasattr(obj, "item"):
        obj = obj.item()
    if isinstance(obj, (bool, int)):
        return obj
    if isinstance(obj, float):
        return _num(obj)
    if str(obj) in ("<NA>", "nan", "NaT"):
        return None
    return str(obj)
