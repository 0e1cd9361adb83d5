"""The goodput report as one self-contained HTML file: the time split by bucket, and a timeline with one band
per start of the job (inline SVG, colour per bucket), findings with their fixes. No network fetch."""

from __future__ import annotations

import json
from typing import Any

from tpudoctor.reports.goodput_summary import (
    BUCKET_COLORS,
    BUCKET_LABELS,
    bucket_rows,
    fixes,
    gate_line,
    headline,
    seconds_text,
    step_line,
)
from tpudoctor.reports.profile_html import CSS, SEVERITY_COLORS, SORT_JS, _e, sortable_table

EXTRA_CSS = """
.ettr{display:inline-block;color:#fff;font-weight:700;padding:6px 14px;border-radius:6px;font-size:22px;margin:12px 0 4px}
.split{display:flex;height:34px;border-radius:4px;overflow:hidden;margin:8px 0 4px;border:1px solid #e0e0e0}
.split div{height:100%}
.band-label{font-size:12px;fill:#424242}
.gate{font-weight:700;margin:10px 0}
"""
WIDTH = 1060


def _ettr_color(ettr: float | None) -> str:
    if ettr is None:
        return "#616161"
    return "#2e7d32" if ettr >= 0.9 else "#ef6c00" if ettr >= 0.7 else "#c62828"


def split_bar(g: dict[str, Any]) -> str:
    rows = [r for r in bucket_rows(g) if r["percent"]]
    if not rows:
        return '<p class="note">The log has no wall time, so the time cannot be split.</p>'
    scale = min(1.0, 100.0 / sum(r["percent"] for r in rows))  # parts over the wall: the bar still ends at 100 %
    cells = "".join(f'<div title="{_e(r["label"])}: {_e(seconds_text(r["seconds"]))} ({r["percent"]:.1f}%)" '
                    f'style="width:{r["percent"] * scale:.3f}%;background:{BUCKET_COLORS.get(r["bucket"], "#9e9e9e")}">'
                    "</div>" for r in rows)
    legend = "".join(f'<span><i style="background:{BUCKET_COLORS.get(r["bucket"], "#9e9e9e")}"></i>'
                     f'{_e(r["label"])} {r["percent"]:.1f}%</span>' for r in rows)
    return f'<div class="split" role="img" aria-label="time by bucket">{cells}</div><div class="legend">{legend}</div>'


def timeline_svg(g: dict[str, Any]) -> str:
    """One band per start of the job, each piece of time at its place on the wall-clock axis."""
    runs = g.get("runs") or []
    wall = g.get("wall_s")
    if not runs or not wall:
        return '<p class="note">No timeline: the log has no timestamps (see the notes).</p>'
    left, right, row_h, top = 150, 16, 46, 26
    plot_w = WIDTH - left - right
    height = top + row_h * len(runs) + 30
    out = [f'<svg role="img" aria-label="goodput timeline" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg">']
    for frac in (0, 0.25, 0.5, 0.75, 1.0):
        x = left + plot_w * frac
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 6}" y2="{height - 24}" stroke="#eeeeee"/>')
        anchor = "start" if frac == 0 else "end" if frac == 1.0 else "middle"
        out.append(f'<text x="{x:.1f}" y="{height - 8}" text-anchor="{anchor}">{_e(seconds_text(wall * frac))}</text>')
    for i, run in enumerate(runs):
        y = top + i * row_h
        steps = (f"steps {run['first_step']}-{run['last_step']}" if run.get("first_step") is not None
                 else "no step")
        out.append(f'<text class="band-label" x="{left - 8}" y="{y + 16}" text-anchor="end">start {i + 1}</text>')
        out.append(f'<text class="band-label" x="{left - 8}" y="{y + 30}" text-anchor="end">{_e(steps)}</text>')
        out.append(f'<rect x="{left}" y="{y + 4}" width="{plot_w}" height="{row_h - 14}" fill="#fafafa"/>')
        for band in run.get("bands") or []:
            if band.get("start_s") is None or not band.get("seconds"):
                continue
            x = left + plot_w * min(max(band["start_s"], 0.0) / wall, 1.0)
            w = max(min(plot_w * band["seconds"] / wall, left + plot_w - x), 1.2)  # kept inside the plot
            overlay = band["bucket"] != "PRODUCTIVE" and any(
                b["bucket"] == "PRODUCTIVE" and b["start_s"] <= band["start_s"] < b["start_s"] + b["seconds"]
                for b in run.get("bands") or [])
            y0, h = (y + 10, row_h - 26) if overlay else (y + 4, row_h - 14)
            title = f"{BUCKET_LABELS.get(band['bucket'], band['bucket'])}: {band['label']} ({seconds_text(band['seconds'])})"
            out.append(f'<rect class="band" data-bucket="{_e(band["bucket"])}" x="{x:.2f}" y="{y0}" width="{w:.2f}" '
                       f'height="{h}" fill="{BUCKET_COLORS.get(band["bucket"], "#9e9e9e")}"><title>{_e(title)}'
                       "</title></rect>")
        end = run.get("end_reason") or ""
        out.append(f'<text x="{left + 4}" y="{y + row_h - 1}" font-size="10">ended: {_e(end[:150])}</text>')
    out.append("</svg>")
    used = {b["bucket"] for run in runs for b in run.get("bands") or []}
    legend = "".join(f'<span><i style="background:{BUCKET_COLORS[b]}"></i>{_e(BUCKET_LABELS[b])}</span>'
                     for b in BUCKET_COLORS if b in used)
    return "".join(out) + f'<div class="legend">{legend}</div>'


def render(doc: dict[str, Any]) -> str:
    g = doc["goodput"]
    ettr = g.get("ettr")
    sources = ", ".join(s["source"] for s in doc["sources"])
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>tpudoctor goodput: {_e(sources)}</title><style>{CSS}{EXTRA_CSS}</style></head><body>",
             "<h1>Where did the time go</h1>", f'<div class="src">{_e(sources)}</div>',
             f'<div class="ettr" style="background:{_ettr_color(ettr)}">ETTR '
             f'{_e(f"{ettr:.3f}" if ettr is not None else "unknown")}</div>',
             f'<div class="reason">{_e(headline(doc))}</div>']
    kpis = [("wall time", seconds_text(g.get("wall_s"))), ("productive", seconds_text(g.get("productive_s"))),
            ("steps", g.get("steps") if g.get("steps") is not None else "n/a"),
            ("restarts", g.get("restarts") if g.get("restarts") is not None else "n/a"),
            ("checkpoint saves", g.get("checkpoint_saves") if g.get("checkpoint_saves") is not None else "n/a"),
            ("median step", seconds_text(g.get("median_step_s")))]
    parts.append('<div class="kpis">' + "".join(f'<div class="kpi"><b>{_e(v)}</b><span>{_e(k)}</span></div>'
                                                for k, v in kpis) + "</div>")
    line = gate_line(doc)
    if line:
        color = "#2e7d32" if doc["gate"]["verdict"] == "passed" else "#c62828"
        parts.append(f'<div class="gate" style="color:{color}">{_e(line)}</div>')
    parts.append(f'<p class="note">{_e(step_line(g))}</p>')
    parts.append("<h2>Time by bucket</h2>" + split_bar(g))
    parts.append("<h2>Timeline: one band per start</h2>" + timeline_svg(g))
    parts.append("<h2>Findings</h2>")
    for f in doc.get("findings") or []:
        if f["status"] not in ("WARN", "FAIL", "ERROR"):
            continue
        color = SEVERITY_COLORS.get(f["severity"], "#616161")
        items = "".join(f"<li>{_e(x)}</li>" for x in fixes(f))
        parts.append(f'<div class="finding" style="border-color:{color}"><h3><span class="sev" style="background:'
                     f'{color}">{_e(f["severity"])}</span>{_e(f["title"])} <code>{_e(f["id"])}</code></h3>'
                     f'<p>{_e(f["message"])}</p><ul>{items}</ul></div>')
    quiet = [f for f in doc.get("findings") or [] if f["status"] not in ("WARN", "FAIL", "ERROR")]
    if quiet:
        parts.append('<p class="note">' + "; ".join(f"{_e(f['id'])}: {_e(f['status'])}" for f in quiet) + "</p>")
    rows = [{"bucket": r["bucket"], "what": r["label"], "seconds": r["seconds"], "percent": r["percent"],
             "note": r["note"]} for r in bucket_rows(g)]
    parts.append("<h2>Buckets</h2>" + sortable_table(rows, [("bucket", "bucket"), ("what", "what"),
                                                            ("seconds", "seconds"), ("percent", "% of wall"),
                                                            ("note", "note")]))
    if g.get("outlier_steps"):
        parts.append("<h2>Steps that stand out</h2>" + sortable_table(
            g["outlier_steps"], [("step", "step"), ("steps", "steps"), ("seconds", "seconds"),
                                 ("excess_s", "over median (s)")]))
    if g.get("saves"):
        parts.append("<h2>Checkpoint saves</h2>" + sortable_table(
            g["saves"], [("step", "step"), ("mode", "mode"), ("blocking_s", "blocking s"),
                         ("blocking_source", "how known"), ("total_s", "total s"), ("where", "line")]))
    notes = list(g.get("notes") or []) + [f"{k}: {v}" for k, v in (g.get("nulls") or {}).items()]
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    parts.append(f'<p class="note">{_e(doc["clock"]["zone"])}; lead worker {_e(doc.get("lead_worker"))}; '
                 f'tpudoctor {_e(doc["tool"]["version"])}</p>')
    summary = {"ettr": ettr, "wall_s": g.get("wall_s"), "restarts": g.get("restarts")}
    parts.append(f'<script type="application/json" id="report-data">{_e(json.dumps(summary))}</script>')
    parts.append(f"<script>{SORT_JS}</script></body></html>")
    return "\n".join(parts)
