"""The views of ``tpudoctor profile analyze``: a capture's diagnosis (the verdict and how sure it is, the steps and
their breakdown, the findings, compilations, programs, top ops, the roofline, host-side ops, the straggler's cost,
the hosts, and what the capture holds host by host), and an op trace's what-if (``pipeline_whatif``)."""

from __future__ import annotations

from typing import Any

from tpudoctor.reports.view import (
    Chart,
    Point,
    Section,
    Span,
    Suite,
    Table,
    View,
    confidence_line,
    figure,
    findings_of,
    properties,
)
from tpudoctor.units import format_ps, format_si

BREAKDOWN_PARTS = ("compute", "collective", "input", "idle", "compile", "host_callback", "host_offload", "other")
STEP_PARTS = (*BREAKDOWN_PARTS[:-1], "outfeed", "host_transfer", "other")
MAX_DETAILED_HOSTS = 4
MAX_ROWS = 15
MAX_ROOFLINE_OPS = 10
UNMEASURABLE = "n/a*"
UNMEASURABLE_NOTE = ("* above the roof: the op's recorded time is too short for a rate (an async start such as "
                     "copy-start, or below the timer's resolution); JSON keeps xprof's figures")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.2g}"
    return "-" if value is None else f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _table(rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...], limit: int = MAX_ROWS) -> Table:
    """``columns``: (key, heading); numbers right-aligned, as they first appear."""
    first = rows[0] if rows else {}
    align = "".join("r" if isinstance(first.get(k), (int, float)) and not isinstance(first.get(k), bool) else "l"
                    for k, _ in columns)
    return Table(tuple(h for _, h in columns), tuple(tuple(_cell(r.get(k)) for k, _ in columns) for r in rows[:limit]),
                 align)


def _table_section(title: str, rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...], *,
                   notes: tuple[str, ...] = (), limit: int = MAX_ROWS, level: int = 2) -> Section | None:
    """A part that is one table of ``rows`` (``_table``); left out when there are none."""
    return Section(title, notes=notes, table=_table(rows, columns, limit), level=level) if rows else None


def steps_line(st: dict[str, Any]) -> str:
    """How the steps were found; for a micro-benchmark, that there are none and which program leads."""
    if st.get("micro_benchmark"):
        return (f"Steps: none: micro-benchmark, no training loop (program with the most device time: "
                f"{st.get('program')})")
    return (f"Steps: {st.get('count', 0)} found by {st.get('method')}"
            + (f" (program {st.get('program')})" if st.get("program") else ""))


def op_category(op: dict[str, Any]) -> str:
    """An op's HLO category; for device work of no program, what it is instead."""
    kind = op.get("kind") or "hlo-op"
    if kind == "runtime-copy":
        return "(runtime copy)"
    if kind == "other":
        return op.get("category") or "(no HLO op)"
    return op.get("category") or ""


def device_time_split(device_ops: dict[str, Any]) -> str:
    """'HLO ops 27.55 ms, runtime copies 0.56 ms, other device work 0.02 ms' (reports before 2.2: '')."""
    if "hlo_op_ms" not in device_ops:
        return ""
    return (f"HLO ops {device_ops['hlo_op_ms']:,.3f} ms, runtime copies {device_ops.get('runtime_copy_ms') or 0:,.3f} ms, "
            f"other device work {device_ops.get('other_op_ms') or 0:,.3f} ms")


def straggler_line(s: dict[str, Any]) -> str:
    """One line for the straggler; reports saved before the collective analysis have only the slowdown."""
    if s.get("delay_ms_median") is None:
        return f"Straggler: {s['host']} ({s['slowdown_percent']:.1f}% slower than the median host)"
    return (f"Straggler: {s['host']} arrives {s['delay_ms_median']:.2f} ms late at the collective per step "
            f"(last in {s['last_arrival_steps']} of {s['steps_compared']} steps); the other hosts wait "
            f"{s.get('others_wait_ms_per_step') or 0:.2f} ms per step for it")


def straggler_lines(doc: dict[str, Any]) -> list[str]:
    """The straggler, or which test found none and the hosts the what-if finds slow since a step (over the whole
    capture they need not arrive last beyond noise)."""
    if doc.get("straggler"):
        return [straggler_line(doc["straggler"])]
    test = (doc.get("cross_host") or {}).get("straggler_test")
    if not test:
        return []
    whatif = (doc.get("analyses") or {}).get("straggler_whatif") or {}
    return ["Straggler: none. " + test["decided_by"], *(
        f"but the what-if finds {r['host']} persistently slow since step {r['onset_step']} "
        f"({float(r.get('persistent_saved_ms') or 0):.2f} ms per step to save)"
        for r in whatif.get("per_host") or [] if r.get("priced") and r.get("onset_step") is not None)]


def _steps(doc: dict[str, Any]) -> Section:
    st, k = doc.get("steps") or {}, doc.get("kpis") or {}
    stats = st.get("stats") or {}
    notes = [steps_line(st)]
    if stats:
        notes.append(f"step time mean {stats['mean_ms']:.2f} ms, median {stats['median_ms']:.2f}, "
                     f"p90 {stats['p90_ms']:.2f}, min {stats['min_ms']:.2f}, max {stats['max_ms']:.2f}")
    notes.append(f"device duty cycle {k.get('duty_cycle_percent') or 0:.1f}%, compiles in window "
                 f"{k.get('compile_count', 0)} ({k.get('compile_ms') or 0:.1f} ms)"
                 + (f", MFU {k['mfu_percent']:.3g}%" if k.get("mfu_percent") is not None else ""))
    pct = (doc.get("breakdown") or {}).get("percent") or {}
    per_step = (doc.get("breakdown") or {}).get("per_step") or [] if st.get("count") else []
    table = Table(("part", "% of step time"), tuple((p.replace("_", " "), f"{pct.get(p) or 0:.1f}")
                                                    for p in BREAKDOWN_PARTS), "lr") if pct and st.get("count") else None
    spans, start = [], 0.0
    for s in per_step:  # steps end to end, each cut into its parts
        n = s.get("step_num") if s.get("step_num") is not None else s.get("step_index")
        for p in STEP_PARTS:
            ms = float(s.get(f"{p}_ms") or 0)
            if ms > 0:
                spans.append(Span("steps", start, start + ms, f"step {n}: {p.replace('_', ' ')} {ms:.2f} ms",
                                  group=p.replace("_", " ")))
                start += ms
    chart = Chart("step time by part, steps end to end", spans=tuple(spans),
                  axis=("", "0 ms", f"{start:,.1f} ms")) if spans else None
    return Section("Steps", notes=tuple(notes), table=table, chart=chart)


def _gaps(doc: dict[str, Any]) -> Section | None:
    breakdown = doc.get("breakdown") or {}
    gaps = breakdown.get("idle_gaps") or []
    if not gaps:
        return None
    span = breakdown.get("device_timeline_span_ms") or max(g["start_ms"] + g["duration_ms"] for g in gaps)
    spans = (Span("first core", 0.0, span, f"device busy or waiting, {span:,.1f} ms"),
             *(Span("first core", g["start_ms"], g["start_ms"] + g["duration_ms"],
                    f"idle {g['duration_ms']:.3f} ms at {g['start_ms']:.1f} ms", marked=True) for g in gaps))
    return Section("Idle gaps on the device timeline", notes=(
        f"The {len(gaps)} largest idle gaps of the first core take {sum(g['duration_ms'] for g in gaps):,.1f} ms, "
        "from its first activity to its last.",), verbose_only=True,
        chart=Chart("idle gaps of the first core", spans=spans, axis=("", "0 ms", f"{span:,.1f} ms"),
                    legend=("idle gap", "device timeline")))


def peaks_line(r: dict[str, Any]) -> str:
    peaks = r["peaks"]
    source = "the capture's device plane" if peaks["source"] == "capture" else f"the {peaks['source'][6:]} table"
    return (f"peaks of {peaks.get('device_kind') or 'the device'} (from {source}): {format_si(peaks['flops_per_s'], 'FLOP/s')}, "
            f"HBM {format_si(peaks['hbm_bytes_per_s'], 'B/s')}")


def program_line(r: dict[str, Any]) -> str:
    p = r["program"]
    oi = p.get("hbm_operational_intensity_flops_per_byte")
    pct = {k: figure(p[k], ".3g", "n/a", "%") for k in ("compute_efficiency_percent", "mfu_percent",
                                                        "hbm_bw_utilization_percent", "roofline_efficiency_percent")}
    return (f"program: {format_si(p['flop_rate_flops_per_s'], 'FLOP/s')} ({pct['compute_efficiency_percent']} of peak), "
            f"MFU {pct['mfu_percent']}, HBM {format_si(p['hbm_bw_bytes_per_s'], 'B/s')} "
            f"({pct['hbm_bw_utilization_percent']} of peak), {figure(oi, '.3g', 'n/a')} FLOP per HBM "
            f"byte, bound by {p['bound_by']}, roofline efficiency {pct['roofline_efficiency_percent']}")


def op_row(op: dict[str, Any]) -> tuple[str, ...]:
    """An op's figures; a rate above the hardware's roof is not a measurement (xprof prints it anyway)."""
    oi = op.get("hbm_operational_intensity_flops_per_byte")
    above = (op.get("roofline_efficiency_percent") or 0) > 100.0
    return (str(op.get("program") or ""), str(op["op_name"]), str(op.get("category") or ""), str(op["bound_by"]),
            f"{op.get('total_time_percent') or 0:.1f}",
            UNMEASURABLE if above else format_si(op.get("flop_rate_flops_per_s"), "FLOP/s"),
            UNMEASURABLE if above else format_si(op.get("hbm_bw_bytes_per_s"), "B/s"), figure(oi, ".3g", "n/a"),
            UNMEASURABLE if above else figure(op.get("roofline_efficiency_percent"), ".3g", "n/a", "%"))


def _roofline(r: dict[str, Any] | None) -> Section | None:
    """The heaviest ops' figures, and in HTML each op on a log-log roofline (FLOPs per HBM byte against FLOP rate,
    under the HBM and compute roofs, sized by its share of time), the whole program a marked point."""
    if not r:
        return None
    rows = tuple(op_row(op) for op in r["ops"][:MAX_ROOFLINE_OPS])
    notes = [peaks_line(r), program_line(r)]
    if r.get("ops_total", 0) > MAX_ROOFLINE_OPS:
        notes.append(f"... {r['ops_total'] - MAX_ROOFLINE_OPS} more ops (all in --format json)")
    if any(UNMEASURABLE in row for row in rows):
        notes.append(UNMEASURABLE_NOTE)

    def point(x: Any, y: Any, name: str, share: float, bound: str, marked: bool = False) -> Point | None:
        return Point(float(x), float(y), share, f"{name}: {format_si(y, 'FLOP/s')}, {x:.3g} FLOP/HBM byte, {share:.1f}% of "
                     f"program time, bound by {bound}", bound, marked) if (x or 0) > 0 and (y or 0) > 0 else None

    program = r["program"]
    points = [point(op.get("hbm_operational_intensity_flops_per_byte"), op.get("flop_rate_flops_per_s"),
                    str(op["op_name"]), op.get("total_time_percent") or 0.0, op["bound_by"]) for op in r["ops"]]
    plotted = [p for p in points if p is not None]
    whole = point(program.get("hbm_operational_intensity_flops_per_byte"), program.get("flop_rate_flops_per_s"),
                  "program", 100.0, program["bound_by"], marked=True)
    missing = len(points) - len(plotted)
    legend = ("One circle per op (area by its share of program time; green compute-bound, blue HBM-bound, orange "
              "other), the red diamond is the whole program." + (
                  f" {missing} op(s) without FLOPs or HBM bytes (copies, waits) cannot sit on a log axis and are not "
                  "plotted." if missing else ""))
    chart = Chart("roofline chart", points=tuple(plotted) + ((whole,) if whole else ()),
                  roofs=(r["peaks"]["flops_per_s"], r["peaks"]["hbm_bytes_per_s"]), legend=(legend, ""))
    return Section("Roofline and MFU", notes=tuple(notes), chart=chart, table=Table(
        ("program", "op", "category", "bound", "time %", "FLOP rate", "HBM bw", "FLOP/HBM byte", "roofline eff."),
        rows, "llllrrrrr"))


def whatif_line(w: dict[str, Any]) -> str:
    """What the straggler what-if found: the replayed step time, and the host that is persistently slow (or that
    none is)."""
    if w.get("status") != "known":
        return f"Straggler what-if unknown: {w.get('reason')}"
    top = (w.get("per_host") or [{}])[0]
    line = (f"{w['steps']} steps of {w['hosts']} hosts replayed as a chain of sync points: "
            f"{w['simulated_step_ms']:.2f} ms per step (measured {w['measured_step_ms']:.2f} ms"
            + (f"; waits predicted from typical transfers: {w['modelled_step_ms']:.2f} ms, "
               f"{w['model_error_percent']:+.1f}%" if w.get("modelled_step_ms") is not None else "")
            + f"), {w['ideal_step_ms']:.2f} ms with every device's compute segments at their median")
    straggler = [r for r in w.get("per_host") or [] if r["host"] == w.get("persistent_straggler_host")]
    if straggler:
        top = straggler[0]
        since = f" since step {top['onset_step']}" if top.get("onset_step") is not None else ""
        kind = f" ({top['time_class']} time)" if top.get("time_class") not in (None, "", "unknown") else ""
        line += (f"; {top['host']} is persistently slow{kind}{since}: removing its excess would save "
                 f"{top['persistent_saved_ms']:.2f} ms per step ({top['persistent_saved_percent']:.1f}%; all its "
                 f"segments at the median: {top['saved_ms']:.2f} ms)")
    elif top.get("host") is not None and (w.get("slowdown_ms") or 0) > 0:
        line += (f"; no host is persistently slow: the {w.get('spread_ms') or w['slowdown_ms']:.2f} ms slowdown "
                 "is spread across the hosts (random imbalance, nothing to fix on one host)")
    return line + "."


def _straggler_cost(w: dict[str, Any] | None) -> list[Section | None]:
    """Each host's saving, and in HTML the first steps per host and chip with the critical path (the last arrival
    at each sync point) marked."""
    if not w:
        return []
    if w.get("status") != "known":
        return [Section("What the straggler costs", notes=(whatif_line(w),))]
    rows = w.get("timeline") or []
    lanes = list(dict.fromkeys((r["host"], r["chip"]) for r in rows))[:32]
    several = len({c for _, c in lanes}) > 1 or len(lanes) != len({h for h, _ in lanes})
    spans = tuple(Span(f"{r['host']} {r['chip']}" if several else str(r["host"]), float(r["start_ms"]),
                       float(r["end_ms"]), f"{r['segment']}: {float(r['start_ms']):.2f}-{float(r['end_ms']):.2f} ms",
                       bool(r.get("critical")) and r["kind"] == "compute") for r in rows if (r["host"], r["chip"]) in lanes)
    end = max((s.end for s in spans), default=0.0)
    chart = Chart("critical path of the first steps", spans=spans, axis=("", "0 ms", f"{end:.1f} ms"),
                  legend=("critical path (last arrival)", "own compute, or in the collective")) if spans else None
    return [Section("What the straggler costs", notes=(whatif_line(w),), chart=chart, table=_table(
        w.get("per_host") or [], (("host", "host"), ("persistent_saved_ms", "step ms saved, persistent excess removed"),
                                  ("persistent_saved_percent", "% of step"), ("priced", "priced"),
                                  ("p_value", "sign test p"), ("onset_step", "since step"),
                                  ("time_class", "kind of time"), ("saved_ms", "all segments at the median"),
                                  ("slowdown_share", "share of the slowdown"), ("critical_segments", "critical segments")),
        limit=32)), _table_section("Saving per chip", w.get("per_chip") or [], (
        ("host", "host"), ("chip", "chip"), ("saved_ms", "step ms saved"), ("saved_percent", "% of step"),
        ("slowdown_share", "share")), limit=32, level=3)]


def _capture(summary: dict[str, Any]) -> list[Section]:
    """What the capture holds: a host table beyond a few hosts, then the planes and lines of each (or the first)."""
    hosts = summary.get("hosts") or []
    notes = (*(f"note: {n}" for n in summary.get("notes") or ()),
             *(f"host {h} not loaded: {m}" for h, m in (summary.get("failed_hosts") or {}).items()))
    sections = [Section(notes=notes)] if notes else []
    if len(hosts) > MAX_DETAILED_HOSTS:
        sections.append(Section("Hosts in the capture", notes=(
            f"planes and lines of the first of {len(hosts)} hosts below (all hosts: --format json)",), table=Table(
            ("host", "device kind", "device planes", "events", "span"),
            tuple((h["hostname"], h["device_kind"], str(h["n_device_planes"]), f"{h['n_events']:,}",
                   format_ps(h["span_ps"])) for h in hosts), "llrrr")))
    for host in hosts[:MAX_DETAILED_HOSTS if len(hosts) <= MAX_DETAILED_HOSTS else 1]:
        rows: list[tuple[str, ...]] = []
        for plane in host["planes"]:
            rows.append((plane["plane_name"], plane.get("device_kind") or "-", str(plane["n_lines"]),
                         f"{plane['n_events']:,}", format_ps(plane["span_ps"])))
            lines = plane["lines"]
            shown = lines if len(lines) <= 12 else sorted(lines, key=lambda line: -line["n_events"])[:10]
            rows += [(f"  {line['line_name']}", "", "", f"{line['n_events']:,}", format_ps(line["span_ps"])) for line in shown]
            if len(shown) < len(lines):
                rest = [line for line in lines if line not in shown]
                rows.append((f"  ... {len(rest)} more lines", "", "", f"{sum(line['n_events'] for line in rest):,}", ""))
        window = host.get("profile_duration_ns")
        sections.append(Section(f"Host {host['hostname']}", notes=(
            f"{host['device_kind']} · {host['n_planes']} planes, {host['n_lines']} lines, {host['n_events']:,} events · "
            f"span {format_ps(host['span_ps'])}" + (f" · profile window {format_ps(window * 1000)}" if window else "")
            + f" · {host['file_size_bytes'] / 1e6:.1f} MB",),
            table=Table(("plane / line", "device kind", "lines", "events", "span"), tuple(rows), "llrrr")))
    return sections


def _diagnosis(doc: dict[str, Any]) -> list[Section | None]:
    confidence = doc.get("verdict_confidence")
    verdict = Section(notes=(f"Verdict: {str(doc['verdict']).upper()} - {doc.get('verdict_reason', '')}",
                             *([confidence_line(confidence.get("level", "unknown"), confidence.get("reasons") or [])]
                               if confidence else [])), marked=True)
    dev, host_ops = doc.get("device_ops") or {}, (doc.get("host_ops") or {}).get("table") or []
    sections = [verdict, _steps(doc), _gaps(doc),
                Section("Findings", findings=findings_of(doc), notes=() if doc.get("findings") else ("no findings",),
                        scope_said=len(doc.get("hosts") or []) <= 1, confidence=True),
                _table_section("Compilations in the capture window",
                               (doc.get("recompilation") or {}).get("functions") or [],
                               (("function", "function"), ("framework", "framework"), ("compile_count", "count"),
                                ("compile_ms", "compile ms"), ("share_of_capture_percent", "% of capture"),
                                ("program_variants", "program variants"))),
                _table_section("Programs by device time", dev.get("programs") or [], (
                    ("program", "program"), ("program_id", "program id"), ("runs", "runs"), ("devices", "devices"),
                    ("device_ms", "device ms"), ("mean_ms", "mean ms per run"), ("share_percent", "% of HLO op time")),
                    notes=(device_time_split(dev),)),
                _table_section("Top device ops by self time", [{**op, "category": op_category(op)}
                                                               for op in dev.get("top_ops") or []], (
                    ("program", "program"), ("name", "op"), ("category", "category"), ("count", "count"),
                    ("self_ms", "self ms"), ("self_percent", "% of op time")),
                    notes=("One row per program and op, as xprof's hlo_stats.",)),
                _roofline(doc.get("roofline")),
                _table_section("Host-side ops", host_ops, (
                    ("kind", "kind"), ("name", "name"), ("count", "count"), ("total_ms", "total ms"),
                    ("share_percent", "%"), ("share_of", "of"))),
                _table_section("Input stages", (doc.get("breakdown") or {}).get("input_stages") or [],
                               (("stage", "stage"), ("count", "count"), ("total_ms", "total ms")))]
    sections += _straggler_cost((doc.get("analyses") or {}).get("straggler_whatif"))
    hosts = doc.get("hosts") or []
    if len(hosts) > 1 or straggler_lines(doc):
        sections.append(Section("Hosts", notes=tuple(straggler_lines(doc)), table=_table(
            [{"host": h["host"], "verdict": h["verdict"], **h["kpis"]} for h in hosts],
            (("host", "host"), ("verdict", "verdict"), ("step_time_mean_ms", "step ms"), ("input_percent", "input %"),
             ("idle_percent", "idle %"), ("compile_ms", "compile ms")), limit=64) if len(hosts) > 1 else None))
    return sections


def view(doc: dict[str, Any]) -> View:
    summary = doc.get("summary") or {}
    source = summary.get("source") or doc.get("source") or ""
    runs = summary.get("runs_available") or []
    notes = [f"{summary.get('n_hosts', 0)} host(s) · {summary.get('n_events', 0):,} events · device: "
             f"{', '.join(summary.get('device_kinds') or []) or 'none'}"]
    if len(runs) > 1:
        notes.append(f"other runs: {', '.join(r for r in runs if r != summary.get('run'))} (choose with --run)")
    sections = (_diagnosis(doc) if "verdict" in doc else []) + _capture(summary)
    k = doc.get("kpis") or {}
    suite = Suite("tpudoctor profile analyze", "tpudoctor.profile", duration_s=float(doc.get("duration_s") or 0.0),
                  properties=properties((("source", source), ("verdict", doc.get("verdict")),
                                         ("step_time_mean_ms", k.get("step_time_mean_ms")),
                                         ("mfu_percent", k.get("mfu_percent")))), summary=str(doc.get("verdict_reason") or ""))
    run = f" · run {summary['run']}" if summary.get("run") else ""
    return View("profile", f"Profile {source}{run}", tuple(notes), tuple(sections), findings_of(doc), suite)


MAX_GROUP_ROWS = 8
MAX_WORKER_ROWS = 12
MAX_LANES = 32


def whatif_sentences(w: dict[str, Any]) -> list[str]:
    """What the what-if found, the sentences every format opens with."""
    if w["status"] != "known":
        return [f"What-if unknown: {w['reason']}"]
    meta = w.get("meta") or {}
    sizes = " x ".join(f"{k[:-5]} {meta[k]}" for k in ("dp_size", "pp_size", "tp_size") if k in meta)
    lines = [f"{w['workers']} workers{f' ({sizes})' if sizes else ''}, {w['steps']} steps replayed as a dependency "
             f"graph (pipeline sends/receives, data-parallel and global collectives): {figure(w['simulated_step_ms'], '.1f')} "
             f"ms per step, {figure(w['ideal_step_ms'], '.1f')} ms with every op at its type's typical duration: "
             f"slowdown S = {figure(w['slowdown'])}."]
    # a persistent worker and a stage imbalance are findings of their own (shown beside these sentences)
    if w["cause"] == "random imbalance":
        lines.append(f"The slowdown (S = {figure(w['slowdown'])}) is spread across the workers (random imbalance): no "
                     "worker's excess over its stage peers is persistent beyond noise, so no host is named.")
    elif w["cause"] not in ("persistent worker", "stage imbalance"):
        lines.append("No slowdown beyond noise.")
    lines.append(f"M_W = {figure(w['m_w'])} (fixing the worst worker, rank {w['m_w_worker']}); "
                 f"M_S = {figure(w['m_s'])} (fixing the last stage, stage {w['m_s_stage']}).")
    return lines


WORKER_COLUMNS = (("rank", "rank"), ("dp_rank", "dp"), ("stage", "stage"),
                  ("persistent_saved_ms", "saved ms (persistent excess)"), ("priced", "priced"),
                  ("p_value", "sign test p"), ("onset_step", "since step"), ("time_class", "kind"),
                  ("saved_ms", "saved ms (all ops typical, noise included)"))


def _wcell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"
    return "-" if value is None else str(value)


def _critical_path(w: dict[str, Any]) -> Section | None:
    """The slowest step's critical path: ops per worker in a sentence, in HTML one lane per worker (compute red,
    communication light)."""
    path = w.get("critical_path") or []
    if not path:
        return None
    ops_per_rank = w["critical_path_ops_per_rank"]
    top = ", ".join(f"rank {r['rank']} {r['ops']}" for r in ops_per_rank[:5])
    end = max(float(r["end_ms"]) for r in path)
    lanes = sorted(r["rank"] for r in ops_per_rank)[:MAX_LANES]
    stage = {r["rank"]: (r["dp_rank"], r["stage"]) for r in path}
    spans = tuple(Span(f"rank {r['rank']} (dp {stage[r['rank']][0]}, stage {stage[r['rank']][1]})",
                       float(r["start_ms"]), float(r["end_ms"]),
                       f"{r['optype']} #{r['seq_id']}: {float(r['start_ms']):.2f}-{float(r['end_ms']):.2f} ms",
                       "compute" in r["optype"] or r["optype"] == "optimizer")
                  for rank in lanes for r in path if r["rank"] == rank)
    return Section("Critical path", notes=(
        f"Critical path of the slowest step (step {w.get('critical_step')}): {len(path)} ops, "
        f"{figure(path[-1]['end_ms'], '.1f')} ms; ops per worker on it: {top}.",),
        chart=Chart("critical path of the slowest step", spans=spans, axis=("", "0 ms", f"{end:.1f} ms"),
                    legend=("compute on the critical path", "communication on it (send/receive, collective)")))


def whatif_view(doc: dict[str, Any]) -> View:
    w, findings = doc["whatif"], findings_of(doc)  # what the exit status is judged on, shown as in every kind
    sections: list[Section] = [Section(notes=tuple(whatif_sentences(w)), marked=True),
                               Section("Findings", findings=findings, notes=() if findings else ("no findings",))]
    if w["status"] == "known":
        sections += [Section(f"Slowdown with only one {title} as recorded (S_G)", table=Table(
            (title, "S_G"), tuple((str(r["group"]), figure(r["slowdown"])) for r in w.get(key, [])[:MAX_GROUP_ROWS]), "lr"))
            for title, key in (("op type", "by_optype"), ("dp rank", "by_dp_rank"), ("stage", "by_stage"))]
        sections.append(Section("Workers (largest all-typical saving first)", table=Table(
            tuple(label for _, label in WORKER_COLUMNS),
            tuple(tuple(_wcell(r.get(k)) for k, _ in WORKER_COLUMNS) for r in (w.get("per_worker") or [])[:MAX_WORKER_ROWS]),
            "rrrrlrrlr")))
        sections.append(_critical_path(w))
    suite = Suite("tpudoctor profile analyze (op trace)", "tpudoctor.profile.whatif", properties=properties((
        ("source", doc["source"]), ("slowdown", w.get("slowdown")), ("cause", w.get("cause")))))
    return View("profile", f"tpudoctor profile analyze: op trace {doc['source']}", (),
                tuple(sections), findings, suite)
