"""Self-contained HTML profile report: inline CSS, inline SVG charts, a little inline JS (sorting).

No CDN or network fetch: the file opens offline and can be attached to a bug.
"""

from __future__ import annotations

import json

from tpudoctor.profile.report import ProfileReport
from tpudoctor.reports import escape
from tpudoctor.reports.profile_diagnosis_text import (
    confidence_line,
    device_time_split,
    fixes,
    op_category,
    steps_line,
    where,
)

COLORS = {"compute": "#2e7d32", "collective": "#283593", "input": "#c62828", "idle": "#9e9e9e", "compile": "#6a1b9a",
          "host_callback": "#ef6c00", "host_offload": "#ad1457", "outfeed": "#00838f", "host_transfer": "#1565c0", "other": "#795548"}
VERDICT_COLORS = {"input-bound": "#c62828", "host-bound": "#ef6c00", "compile-bound": "#6a1b9a",
                  "device-bound": "#2e7d32", "communication-bound": "#283593", "unknown": "#616161"}
SEVERITY_COLORS = {"critical": "#b71c1c", "high": "#c62828", "medium": "#ef6c00", "low": "#1565c0", "info": "#616161"}

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#212121;
background:#fff;line-height:1.45;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e0e0e0;padding-bottom:4px}
.src{color:#616161;font-size:13px;word-break:break-all}
.verdict{display:inline-block;color:#fff;font-weight:700;padding:6px 14px;border-radius:6px;font-size:20px;margin:12px 0 4px}
.reason{font-size:15px;margin:4px 0 4px}
.confidence{font-size:13px;color:#424242;margin:0 0 12px}
.kpis{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.kpi{border:1px solid #e0e0e0;border-radius:6px;padding:8px 12px;min-width:120px}
.kpi b{display:block;font-size:20px} .kpi span{font-size:12px;color:#616161}
.finding{border-left:5px solid;padding:6px 12px;margin:10px 0;background:#fafafa}
.finding h3{margin:0 0 4px;font-size:15px} .finding p{margin:4px 0} .finding ul{margin:4px 0 4px 18px;padding:0}
.sev{font-size:11px;font-weight:700;color:#fff;padding:1px 6px;border-radius:3px;margin-right:6px;text-transform:uppercase}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0}
th,td{border-bottom:1px solid #eee;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5;cursor:pointer;user-select:none;white-space:nowrap} th:after{content:' \\2195';color:#bdbdbd}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.legend span{display:inline-block;margin-right:14px;font-size:13px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
svg text{font-family:system-ui,sans-serif;font-size:11px;fill:#424242}
.note{color:#616161;font-size:13px}
"""

SORT_JS = """
document.querySelectorAll('table.sortable th').forEach(function(th, i){
  th.addEventListener('click', function(){
    var table = th.closest('table'), body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var asc = th.getAttribute('data-asc') !== '1';
    th.setAttribute('data-asc', asc ? '1' : '0');
    rows.sort(function(a, b){
      var x = a.cells[i].getAttribute('data-v') || a.cells[i].textContent;
      var y = b.cells[i].getAttribute('data-v') || b.cells[i].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function(r){ body.appendChild(r); });
  });
});
"""


def render(report: ProfileReport) -> str:
    return render_document(report.to_dict())


def _e(value) -> str:
    return escape.html(str(value if value is not None else ""))


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    return _e(value)


def sortable_table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    if not rows:
        return '<p class="note">none</p>'
    head = "".join(f"<th>{_e(label)}</th>" for _, label in columns)
    body = []
    for r in rows:
        cells = []
        for key, _ in columns:
            v = r.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                cells.append(f'<td class="num" data-v="{v}">{_fmt(v)}</td>')
            else:
                cells.append(f"<td>{_e(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def step_chart(per_step: list[dict], width: int = 1040, height: int = 260) -> str:
    """Stacked bars: one per step, parts in COLORS order, height = step time."""
    if not per_step:
        return '<p class="note">No steps, so no step chart.</p>'
    parts = [p for p in COLORS if any((s.get(f"{p}_ms") or 0) > 0 for s in per_step)]
    top = max((s.get("step_ms") or 0) for s in per_step) or 1.0
    left, plot_h = 56, height - 40
    plot_w = width - left - 10
    bar_w = plot_w / len(per_step)
    out = [f'<svg role="img" aria-label="step time breakdown" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']
    for frac in (0, 0.25, 0.5, 0.75, 1.0):
        y = 10 + plot_h * (1 - frac)
        out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{top * frac:.1f}</text>')
    out.append(f'<text x="12" y="{10 + plot_h / 2:.0f}" transform="rotate(-90 12 {10 + plot_h / 2:.0f})" '
               'text-anchor="middle">step time (ms)</text>')
    for i, s in enumerate(per_step):
        y = 10 + plot_h
        x = left + i * bar_w
        tip = [f"step {s.get('step_num') if s.get('step_num') is not None else s.get('step_index')}: "
               f"{(s.get('step_ms') or 0):.2f} ms"]
        for p in parts:
            v = s.get(f"{p}_ms") or 0
            if v <= 0:
                continue
            h = plot_h * v / top
            y -= h
            out.append(f'<rect x="{x + bar_w * 0.1:.2f}" y="{y:.2f}" width="{max(bar_w * 0.8, 1):.2f}" '
                       f'height="{h:.2f}" fill="{COLORS[p]}"/>')
            tip.append(f"{p} {v:.2f} ms")
        out.append(f'<rect x="{x:.2f}" y="10" width="{bar_w:.2f}" height="{plot_h}" fill="transparent">'
                   f'<title>{_e(" | ".join(tip))}</title></rect>')
    step_every = max(1, len(per_step) // 20)
    for i in range(0, len(per_step), step_every):
        out.append(f'<text x="{left + (i + 0.5) * bar_w:.1f}" y="{height - 10}" text-anchor="middle">{i}</text>')
    out.append("</svg>")
    legend = "".join(f'<span><i style="background:{COLORS[p]}"></i>{_e(p.replace("_", " "))}</span>' for p in parts)
    return "".join(out) + f'<div class="legend">{legend}</div>'


def gap_timeline(span_ms: float | None, gaps: list[dict], width: int = 1040, height: int = 90) -> str:
    """The stepped span as a bar with the device-idle gaps marked in red at their place in time."""
    if not gaps:
        return '<p class="note">No idle gaps between device work.</p>'
    span = span_ms or max(g["start_ms"] + g["duration_ms"] for g in gaps)
    left, plot_w = 10, width - 20
    out = [f'<svg role="img" aria-label="idle gaps timeline" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
           f'<rect x="{left}" y="20" width="{plot_w}" height="34" fill="#a5d6a7"/>']
    for g in gaps:
        x = left + plot_w * max(g["start_ms"], 0) / span
        w = max(plot_w * g["duration_ms"] / span, 1.5)
        if x > left + plot_w:
            continue
        faint = ' fill-opacity="0.45"' if g["duration_ms"] < span * 0.002 else ""  # too short to see: hint only
        out.append(f'<rect x="{x:.2f}" y="20" width="{w:.2f}" height="34" fill="#c62828"{faint}>'
                   f'<title>idle {g["duration_ms"]:.3f} ms at {g["start_ms"]:.1f} ms</title></rect>')
    out.append(f'<text x="{left}" y="70">0 ms</text><text x="{left + plot_w}" y="70" text-anchor="end">{span:,.1f} ms</text>')
    total = sum(g["duration_ms"] for g in gaps)
    out.append(f'<text x="{left}" y="14">device busy (green) and the {len(gaps)} largest idle gaps (red, '
               f'{total:,.1f} ms) of the first core, from its first activity to its last</text>')
    out.append("</svg>")
    return "".join(out)


def render_document(doc: dict) -> str:
    parts = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
             f"<title>tpudoctor profile: {_e(doc.get('verdict', 'report'))}</title><style>{CSS}</style></head><body>",
             "<h1>tpudoctor profile report</h1>", f'<div class="src">{_e(doc.get("source"))}</div>']
    if "verdict" in doc:
        v = doc["verdict"]
        parts.append(f'<div class="verdict" style="background:{VERDICT_COLORS.get(v, "#616161")}">{_e(v)}</div>')
        parts.append(f'<div class="reason">{_e(doc.get("verdict_reason"))}</div>')
        confidence = doc.get("verdict_confidence")
        if confidence:
            parts.append(f'<div class="confidence">confidence <b>{_e(confidence.get("level"))}</b>'
                         + "".join(f"<br>{_e(r)}" for r in confidence.get("reasons") or []) + "</div>")
        k = doc.get("kpis", {})
        st = doc["steps"]
        kpi_items = [
            ("step time (mean)", f"{k['step_time_mean_ms']:.2f} ms" if k.get("step_time_mean_ms") is not None else "n/a"),
            ("steps", f"{st['count']}"),
            ("input (of step time)", f"{k.get('input_percent') or 0:.1f}%"),
            ("idle (of step time)", f"{k.get('idle_percent') or 0:.1f}%"),
            ("device duty cycle", f"{k.get('duty_cycle_percent') or 0:.1f}%"),
            ("compiles in window", f"{k.get('compile_count', 0)} / {k.get('compile_ms') or 0:.0f} ms"),
        ]
        if k.get("mfu_percent") is not None:
            kpi_items.append(("MFU (model FLOP utilisation)", f"{k['mfu_percent']:.3g}%"))
        parts.append('<div class="kpis">' + "".join(f'<div class="kpi"><b>{_e(val)}</b><span>{_e(label)}</span></div>'
                                                    for label, val in kpi_items) + "</div>")
        parts.append(f'<p class="note">{_e(steps_line(st))}' + (f". {_e(st['reason'])}" if st.get("reason") else "")
                     + "</p>")
        parts.append("<h2>Findings</h2>")
        for f in doc["findings"]:
            color = SEVERITY_COLORS.get(f["severity"], "#616161")
            items = "".join(f"<li>{_e(x)}</li>" for x in fixes(f))
            scope = f' <span class="note">{_e(where(f, doc))}</span>' if where(f, doc) else ""
            parts.append(f'<div class="finding" style="border-color:{color}"><h3><span class="sev" style="background:{color}">'
                         f'{_e(f["severity"])}</span>{_e(f["title"])} <code>{_e(f["id"])}</code></h3>'
                         f'{scope}<p>{_e(f["message"])}</p>'
                         + (f'<p class="note">confidence {_e(confidence_line(f["confidence"]))}</p>'
                            if f.get("confidence") else "") + f'<ul>{items}</ul></div>')
        if not doc["findings"]:
            parts.append('<p class="note">No findings.</p>')
        per_step = doc["breakdown"]["per_step"] if st.get("count") else []
        parts.append("<h2>Step-time breakdown</h2>" + step_chart(per_step))
        parts.append("<h2>Idle gaps on the device timeline</h2>" + gap_timeline(doc["breakdown"].get("device_timeline_span_ms"),
                                                                         doc["breakdown"]["idle_gaps"]))
        parts.append("<h2>Compilations in the capture window</h2>" + sortable_table(
            doc["recompilation"]["functions"], [("function", "function"), ("framework", "framework"),
                                                ("compile_count", "count"), ("compile_ms", "compile ms"),
                                                ("share_of_capture_percent", "% of capture"),
                                                ("program_variants", "program variants")]))
        dev = doc["device_ops"]
        if dev.get("programs"):
            parts.append("<h2>Programs by device time</h2>" + f'<p class="note">{_e(device_time_split(dev))}</p>'
                         + sortable_table(dev["programs"], [
                             ("program", "program"), ("program_id", "program id"), ("runs", "runs"),
                             ("devices", "devices"), ("device_ms", "device ms"), ("mean_ms", "mean ms per run"),
                             ("share_percent", "% of HLO op time")]))
        parts.append("<h2>Top device ops by self time</h2>"
                     '<p class="note">One row per program and op, as xprof\'s hlo_stats.</p>' + sortable_table(
                         [{**op, "category": op_category(op)} for op in dev["top_ops"]],
                         [("program", "program"), ("name", "op"), ("category", "category"), ("count", "count"),
                          ("self_ms", "self ms"), ("self_percent", "% of op time")]))
        if doc.get("roofline"):
            from tpudoctor.reports.roofline_view import (
                UNMEASURABLE,
                UNMEASURABLE_NOTE,
                op_rows,
                program_line,
                roofline_chart,
            )

            parts.append("<h2>Roofline and MFU</h2>" + f'<p>{_e(program_line(doc["roofline"]))}</p>'
                         + roofline_chart(doc["roofline"]))
            rows = op_rows(doc["roofline"], limit=50)
            parts.append(sortable_table(rows, [(c, c) for c in rows[0]]) if rows else "")
            if any(row["roofline eff."] == UNMEASURABLE for row in rows):
                parts.append(f'<p class="note">{_e(UNMEASURABLE_NOTE)}</p>')
        parts.append("<h2>Host-side ops</h2>" + sortable_table(
            doc["host_ops"]["table"], [("kind", "kind"), ("name", "name"), ("count", "count"),
                                       ("total_ms", "total ms"), ("share_percent", "%"), ("share_of", "of")]))
        parts.append("<h2>Input stages</h2>" + sortable_table(
            doc["breakdown"]["input_stages"], [("stage", "stage"), ("count", "count"), ("total_ms", "total ms")]))
        if (doc.get("analyses") or {}).get("straggler_whatif"):
            from tpudoctor.reports.whatif_view import section

            parts.append(section(doc["analyses"]["straggler_whatif"], sortable_table))
        if len(doc.get("hosts", [])) > 1:
            parts.append("<h2>Hosts</h2>" + sortable_table(
                [{"host": h["host"], "verdict": h["verdict"], **h["kpis"]} for h in doc["hosts"]],
                [("host", "host"), ("verdict", "verdict"), ("step_time_mean_ms", "step ms"),
                 ("input_percent", "input %"), ("idle_percent", "idle %"), ("compile_ms", "compile ms")]))
    parts.append(f'<script type="application/json" id="report-data">{_e(json.dumps({"verdict": doc.get("verdict")}))}</script>')
    parts.append(f"<script>{SORT_JS}</script></body></html>")
    return "\n".join(parts)
