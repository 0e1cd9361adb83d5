"""Renders ``tpudoctor compare`` results (two profiles, or one against its history): text, JSON,
markdown for a pull-request review, self-contained HTML, and JUnit XML. Comparability comes first
in every format."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from tpudoctor.findings import DEFAULT_GATE, Gate, Status
from tpudoctor.reports import escape

ARROWS = {"better": "better", "worse": "WORSE", "same": "same", "n/a": "n/a"}
MOVERS_SHOWN = 10
RATE_LABELS = {"flop_rate_flops_per_s": ("FLOP rate", 1e9, "GFLOP/s"),
               "hbm_bw_bytes_per_s": ("HBM bw", 1e9, "GB/s"),
               "memory_bw_bytes_per_s": ("memory bw", 1e9, "GB/s")}


def render(result: dict, fmt: str, *, gate: Gate = DEFAULT_GATE) -> str:
    """``gate``: the run's; a gated regression is a JUnit failure only where it fails the run."""
    if fmt == "json":
        return json.dumps(result, indent=2) + "\n"
    history = result.get("kind") == "tpudoctor.profile_history"
    if fmt == "markdown":
        return _history_markdown(result) if history else _markdown(result)
    if fmt == "html":
        return _html(result, history)
    if fmt == "junit":
        return _junit(result, history, gate)
    return _history_text(result) if history else _text(result)


# ------------------------------------------------------------------ shared pieces

def _v(x, sign: str = "") -> str:
    """Two decimals, or three significant figures for a small non-zero figure (an MFU of 0.000487 %
    is not 0.00)."""
    if x is None:
        return "n/a"
    if not isinstance(x, float):
        return f"{x:{sign}}" if sign else str(x)
    return f"{x:{sign}.3g}" if 0 < abs(x) < 0.01 else f"{x:{sign},.2f}"


def _delta(row) -> str:
    if row["delta"] is None:
        return "n/a"
    pct = f" ({row['delta_percent']:+.1f}%)" if row["delta_percent"] is not None else ""
    return f"{_v(float(row['delta']), '+')}{pct}"


def _ms(ps) -> str:
    return "n/a" if ps is None else f"{ps / 1e9:,.3f}"


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:+.1f}%"


def comparability_lines(result: dict) -> list[str]:
    """Plain sentences: comparable or not and why, the differences noted, the fields not stated."""
    c = result.get("comparability") or {}
    if not c:
        return []
    lines = []
    if c.get("comparable", True):
        lines.append("Comparable: same device type, kind, device count and host layout"
                     if not c.get("unknown_fields") else "Comparable as far as both state")
    else:
        forced = " (--force: judged anyway)" if result.get("forced") else ""
        lines.append(f"NOT COMPARABLE{forced}: " + "; ".join(c.get("reasons") or []))
    lines += [f"note: {n}" for n in c.get("notes") or []]
    if c.get("unknown_fields"):
        lines.append("not stated by both, so not compared: " + ", ".join(c["unknown_fields"]))
    return lines


def identity_rows(result: dict) -> list[tuple[str, str, str]]:
    c = result.get("comparability") or {}
    a, b = c.get("baseline") or {}, c.get("candidate") or {}
    fields = ("device_type", "device_kind", "n_hosts", "n_devices", "topology", "framework", "framework_version",
              "libtpu_version", "step_method", "step_program")
    return [(f, _v(a.get(f)), _v(b.get(f))) for f in fields if a.get(f) is not None or b.get(f) is not None]


def _rates(row: dict, names: list[str]) -> str:
    parts = []
    for rate in names:
        label, scale, unit = RATE_LABELS.get(rate, (rate, 1.0, ""))
        d = row.get(f"delta_{rate}")
        if d is not None:
            parts.append(f"{label} {d / scale:+,.2f} {unit}")
    return ", ".join(parts)


def op_lines(result: dict) -> list[str]:
    diff = result.get("op_diff")
    if diff is None:
        return [f"Op-level diff: {result.get('op_diff_note') or 'not available'}"] if "op_diff" in result else []
    counts = diff["counts"]
    basis = "ms per step" if diff["time_basis"] == "per-step" else "ms in the capture"
    lines = [f"Op-level diff ({basis}): {counts['added']} added, {counts['removed']} removed, "
             f"{counts['slower']} slower, {counts['faster']} faster; device op time "
             f"{_ms(diff['baseline_time_ps'])} -> {_ms(diff['candidate_time_ps'])}"]
    if result.get("op_diff_note"):
        lines.append(f"  note: {result['op_diff_note']}")
    if diff["movers"]:
        lines.append("  top movers by absolute time:")
        for o in diff["movers"][:MOVERS_SHOWN]:
            rates = _rates(o, diff.get("rates") or [])
            lines.append(f"  {o['status']:<8} {str(o['op_name'])[:40]:<40} {str(o.get('program') or '-')[:20]:<20} "
                         f"{_ms(o['baseline_time_ps']):>11} -> "
                         f"{_ms(o['candidate_time_ps']):>11} ({(o['delta_time_ps'] or 0) / 1e9:+,.3f} ms"
                         f"{', avg ' + _pct(o['delta_avg_time_percent']) if o['status'] not in ('added', 'removed') else ''})"
                         + (f"  {rates}" if rates else ""))
    else:
        lines.append("  no op moved")
    return lines


def _verdict_line(result) -> str:
    if result["threshold_percent"] is None:
        return ""
    if not result.get("comparable", True) and not result.get("forced"):
        return f"not judged against {result['threshold_percent']:g}%: the captures are not comparable"
    if result["regressed"]:
        return f"REGRESSION beyond {result['threshold_percent']:g}%: {', '.join(result['regressed_by'])}"
    return f"no regression beyond {result['threshold_percent']:g}%"


# ------------------------------------------------------------------ two profiles

def _text(result) -> str:
    lines = [f"baseline  {result['baseline']['source']} ({result['baseline']['verdict']})",
             f"candidate {result['candidate']['source']} ({result['candidate']['verdict']})", ""]
    lines += comparability_lines(result)
    for field, a, b in identity_rows(result):
        lines.append(f"  {field:<18} {a:>28} | {b}")
    lines.append("")
    for r in result["kpis"]:
        lines.append(f"{r['kpi']:<28} {_v(r['baseline']):>12} -> {_v(r['candidate']):>12}  {_delta(r):>20}  "
                     f"{ARROWS[r['direction']]}")
    ops = op_lines(result)
    if ops:
        lines += ["", *ops]
    line = _verdict_line(result)
    return "\n".join(escape.plain(x) for x in lines + ([""] + [line] if line else [])) + "\n"


def _markdown(result) -> str:
    c = result.get("comparability") or {}
    md = escape.markdown
    lines = ["### tpudoctor profile comparison", "",
             f"Baseline {escape.markdown_code(result['baseline']['source'])} (**{md(result['baseline']['verdict'])}**) "
             f"vs candidate {escape.markdown_code(result['candidate']['source'])} "
             f"(**{md(result['candidate']['verdict'])}**)", ""]
    if c:
        mark = ":white_check_mark:" if c.get("comparable", True) else ":no_entry:"
        lines += [f"{mark} " + md(comparability_lines(result)[0]), ""]
        lines += [f"- {md(line)}" for line in comparability_lines(result)[1:]]
        rows = identity_rows(result)
        if rows:
            lines += ["", "| | baseline | candidate |", "|---|---|---|"]
            lines += [f"| {md(f)} | {md(a)} | {md(b)}{' :warning:' if a != b else ''} |" for f, a, b in rows]
        lines.append("")
    lines += ["| KPI | baseline | candidate | delta | |", "|---|---:|---:|---:|---|"]
    icons = {"better": ":white_check_mark: better", "worse": ":x: worse", "same": "same", "n/a": ""}
    for r in result["kpis"]:
        lines.append(f"| {md(r['kpi'])} | {_v(r['baseline'])} | {_v(r['candidate'])} | {_delta(r)} | "
                     f"{icons[r['direction']]} |")
    diff = result.get("op_diff")
    if diff is not None:
        counts = diff["counts"]
        unit = "ms/step" if diff["time_basis"] == "per-step" else "ms"
        lines += ["", f"**Ops:** {counts['added']} added, {counts['removed']} removed, {counts['slower']} slower, "
                      f"{counts['faster']} faster"]
        if result.get("op_diff_note"):
            lines.append(f"_{md(result['op_diff_note'])}_")
        if diff["movers"]:
            rates = diff.get("rates") or []
            head = "| op | status | baseline " + unit + " | candidate " + unit + " | delta ms | avg |"
            lines += ["", head + (" rates |" if rates else "") + " program |",
                      "|---|---|---:|---:|---:|---:|" + ("---|" if rates else "") + "---|"]
            for o in diff["movers"][:MOVERS_SHOWN]:
                lines.append(f"| {escape.markdown_code(o['op_name'], in_table=True)} | {o['status']} | "
                             f"{_ms(o['baseline_time_ps'])} | "
                             f"{_ms(o['candidate_time_ps'])} | {(o['delta_time_ps'] or 0) / 1e9:+,.3f} | "
                             f"{_pct(o['delta_avg_time_percent'])} |" + (f" {md(_rates(o, rates))} |" if rates else "")
                             + f" {md(o.get('program') or '-')} |")
    elif result.get("op_diff_note"):
        lines += ["", f"_Op-level diff: {md(result['op_diff_note'])}_"]
    line = _verdict_line(result)
    if line:
        lines += ["", f"**{md(line)}**"]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ history

def history_lines(result: dict) -> list[str]:
    gate = result["gate"]
    lines = [f"candidate {result['candidate']['source']} ({result['candidate']['verdict']})",
             f"history   {result['history']}: last {gate['n_history']} report(s) (--last {gate['last_n']})", ""]
    lines += comparability_lines(result)
    lines.append("")
    for j in gate["kpis"]:
        mark = {"regression": "REGRESSION", "improvement": "better", "no_change": "ok", "not_judged": "not judged"}
        lines.append(f"{j['kpi']:<22} {mark[j['verdict']]:<11} {'(gated) ' if j['gated'] else ''}{j['reason']}")
    lines.append("")
    if gate["verdict"] == "regression":
        lines.append("REGRESSION against the history: " + ", ".join(gate["regressed_by"]))
    elif gate["verdict"] == "not_judged":
        lines.append("NOT JUDGED: too little history for every gated KPI")
    else:
        lines.append(f"no significant regression (robust z beyond {gate['z_threshold']:g} and a change beyond "
                     f"{gate['min_change_percent']:g}% / {gate['min_change_points']:g} points needed)")
    return lines


def _history_text(result) -> str:
    return "\n".join(escape.plain(line) for line in history_lines(result)) + "\n"


def _history_markdown(result) -> str:
    gate = result["gate"]
    icon = {"regression": ":x:", "no_change": ":white_check_mark:", "not_judged": ":grey_question:"}[gate["verdict"]]
    md = escape.markdown
    lines = ["### tpudoctor profile history gate", "",
             f"{icon} candidate {escape.markdown_code(result['candidate']['source'])} against the last "
             f"{gate['n_history']} report(s) in {escape.markdown_code(result['history'])}: "
             f"**{md(gate['verdict'].replace('_', ' '))}**", ""]
    lines += [f"- {md(line)}" for line in comparability_lines(result)]
    lines += ["", "| KPI | verdict | candidate | history median | change | robust z |", "|---|---|---:|---:|---:|---:|"]
    for j in gate["kpis"]:
        change = (f"{j['change_percent']:+.1f}%" if j.get("change_percent") is not None and not j["in_points"]
                  else (f"{j['change']:+.2f} pt" if j.get("change") is not None else "n/a"))
        z = f"{j['robust_z']:+.1f}" if j.get("robust_z") is not None else "n/a"
        lines.append(f"| {md(j['kpi'])}{' (gated)' if j['gated'] else ''} | {md(j['verdict'].replace('_', ' '))} | "
                     f"{_v(j.get('candidate'))} | {_v(j.get('history_median'))} | {change} | {z} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ junit

def _junit(result: dict, history: bool, gate: Gate) -> str:
    """A regression that fails the run (``gate``) is a failure; comparability is said, never failed: it does
    not set exit 1 (a gate that cannot judge is exit 2)."""
    suites = ET.Element("testsuites", name="tpudoctor")
    cases: list[tuple[str, str | None, str]] = []  # (name, failure message or None, body)
    comp = comparability_lines(result)
    cases.append(("comparable", None, "\n".join(comp)))
    if history:
        for j in result["gate"]["kpis"]:
            failure = (f"{j['kpi']} regressed: {j['reason']}" if j["verdict"] == "regression" and j["gated"]
                       and gate.fails(Status.FAIL) else None)
            cases.append((j["kpi"], failure, escape.plain(j["reason"])))
        suite_name = "tpudoctor compare --history"
    else:
        failure = _verdict_line(result) if result["regressed"] and gate.fails(Status.FAIL) else None
        cases.append(("no regression", failure, "\n".join(_text(result).splitlines())))
        suite_name = "tpudoctor compare"
    failures = sum(1 for _, f, _ in cases if f)
    suite = ET.SubElement(suites, "testsuite", name=suite_name, tests=str(len(cases)), failures=str(failures),
                          errors="0", skipped="0")
    for name, failure, body in cases:
        case = ET.SubElement(suite, "testcase", classname="tpudoctor.profile.compare", name=name, time="0")
        if failure:
            ET.SubElement(case, "failure", message=failure[:500], type="regression").text = body
        else:
            ET.SubElement(case, "system-out").text = body
    return escape.junit_document(suites)


# ------------------------------------------------------------------ html

_CSS = """body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#212121;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #e0e0e0;margin-top:24px}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid #eee;padding:4px 8px;text-align:left}
th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
.banner{padding:8px 12px;border-radius:6px;color:#fff;font-weight:700;display:inline-block}
.ok{background:#2e7d32}.bad{background:#c62828}.note{color:#616161;font-size:13px}.worse{color:#c62828}.better{color:#2e7d32}"""


def _html(result: dict, history: bool) -> str:
    e = escape.html
    out = ["<!doctype html><html><head><meta charset='utf-8'>",
           f"<title>tpudoctor {'history gate' if history else 'comparison'}</title><style>{_CSS}</style></head><body>"]
    comparable = result.get("comparable", True)
    if history:
        out.append(f"<h1>Profile history gate</h1><p>candidate <code>{e(str(result['candidate']['source']))}</code> "
                   f"against <code>{e(result['history'])}</code></p>")
    else:
        out.append(f"<h1>Profile comparison</h1><p>baseline <code>{e(str(result['baseline']['source']))}</code> "
                   f"({e(str(result['baseline']['verdict']))}) vs candidate <code>"
                   f"{e(str(result['candidate']['source']))}</code> ({e(str(result['candidate']['verdict']))})</p>")
    lines = comparability_lines(result)
    if lines:
        out.append(f"<h2>Comparability</h2><div class='banner {'ok' if comparable else 'bad'}'>{e(lines[0])}</div>")
        out += [f"<p class='note'>{e(line)}</p>" for line in lines[1:]]
        rows = identity_rows(result)
        if rows:
            out.append("<table><tr><th></th><th>baseline</th><th>candidate</th></tr>")
            out += [f"<tr><td>{e(f)}</td><td>{e(a)}</td><td{' class=worse' if a != b else ''}>{e(b)}</td></tr>"
                    for f, a, b in rows]
            out.append("</table>")
    if history:
        gate = result["gate"]
        out.append(f"<h2>Verdict: {e(gate['verdict'].replace('_', ' '))}</h2><table><tr><th>KPI</th><th>verdict</th>"
                   "<th>reason</th></tr>")
        out += [f"<tr><td>{e(j['kpi'])}{' (gated)' if j['gated'] else ''}</td><td>{e(j['verdict'])}</td>"
                f"<td>{e(j['reason'])}</td></tr>" for j in gate["kpis"]]
        out.append("</table>")
    else:
        out.append("<h2>KPIs</h2><table><tr><th>KPI</th><th>baseline</th><th>candidate</th><th>delta</th><th></th></tr>")
        out += [f"<tr><td>{e(r['kpi'])}</td><td class=num>{e(_v(r['baseline']))}</td><td class=num>"
                f"{e(_v(r['candidate']))}</td><td class=num>{e(_delta(r))}</td><td class={r['direction']}>"
                f"{e(r['direction'])}</td></tr>" for r in result["kpis"]]
        out.append("</table>")
        diff = result.get("op_diff")
        out.append("<h2>Ops</h2>")
        if diff is None:
            out.append(f"<p class='note'>{e(result.get('op_diff_note') or 'no op-level diff')}</p>")
        else:
            out += [f"<p>{e(line.strip())}</p>" for line in op_lines(result)[:1]]
            if result.get("op_diff_note"):
                out.append(f"<p class='note'>{e(result['op_diff_note'])}</p>")
            unit = "ms/step" if diff["time_basis"] == "per-step" else "ms"
            out.append(f"<table><tr><th>op</th><th>status</th><th>baseline {unit}</th><th>candidate {unit}</th>"
                       "<th>delta ms</th><th>avg</th><th>rate deltas</th><th>program</th></tr>")
            out += [f"<tr><td><code>{e(str(o['op_name']))}</code></td><td class="
                    f"{'worse' if o['status'] in ('slower', 'added') else 'better'}>{e(o['status'])}</td>"
                    f"<td class=num>{_ms(o['baseline_time_ps'])}</td><td class=num>{_ms(o['candidate_time_ps'])}</td>"
                    f"<td class=num>{(o['delta_time_ps'] or 0) / 1e9:+,.3f}</td><td class=num>"
                    f"{_pct(o['delta_avg_time_percent'])}</td><td>{e(_rates(o, diff.get('rates') or []))}</td>"
                    f"<td>{e(o.get('program') or '-')}</td></tr>"
                    for o in diff["movers"][:MOVERS_SHOWN]]
            out.append("</table>")
        line = _verdict_line(result)
        if line:
            out.append(f"<h2>{e(line)}</h2>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
