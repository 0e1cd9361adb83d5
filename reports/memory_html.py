"""Memory report as one HTML page: the findings with their fixes, per host a plot of each allocator's bytes in
use over the capture (the document's sampled timeline, the peak marked) and its tables, per log its
out-of-memory listing, and the chips across the pod."""

from __future__ import annotations

from typing import Any

from tpudoctor.findings import Finding, Status
from tpudoctor.reports import escape
from tpudoctor.reports.markers import MARKERS
from tpudoctor.reports.memory_words import (
    ALLOCATOR_COLUMNS,
    BUCKET_COLUMNS,
    BUFFER_COLUMNS,
    CHIP_COLUMNS,
    FIX_COLUMNS,
    LISTING_COLUMNS,
    PROFILE_DEVICE_COLUMNS,
    SITE_COLUMNS,
    allocator_row,
    bucket_rows,
    buffer_row,
    chip_row,
    fix_row,
    headline,
    listing_header,
    listing_row,
    profile_device_row,
    profile_title,
    site_row,
    size,
)

_STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;"
          "margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}.FAIL,.ERROR{color:#b00}"
          ".WARN{color:#a60}.PASS{color:#070}code{background:#f4f4f4;padding:0 .2em}svg{background:#fafafa;"
          "border:1px solid #ddd}.line{fill:none;stroke:#36c;stroke-width:1.5}.cap{stroke:#b00;stroke-dasharray:4}"
          ".peak{fill:#b00}")
_W, _H, _PAD = 640, 160, 40


def _table(columns: tuple[str, ...], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape.html(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{escape.html(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def plot(allocator: dict[str, Any]) -> str:
    """An inline SVG of the allocator's bytes in use (its sampled timeline), the peak marked, the capacity
    dashed where it fits the scale."""
    line = allocator["timeline"]
    times, values = line["time_ms"], line["bytes_in_use"]
    if not times:
        return ""
    t0, t1 = min(times), max(times)
    top = max(max(values), allocator["peak_bytes"], 1)
    capacity = allocator["capacity_bytes"]
    if capacity and capacity <= 1.25 * top:
        top = max(top, capacity)
    span = (t1 - t0) or 1.0

    def x(t: float) -> float:
        return _PAD + (t - t0) / span * (_W - 2 * _PAD)

    def y(v: float) -> float:
        return _H - _PAD / 2 - v / top * (_H - _PAD)

    points = []
    for i, (t, v) in enumerate(zip(times, values, strict=True)):
        if i:
            points.append(f"{x(t):.1f},{y(values[i - 1]):.1f}")  # a step: bytes hold until the next event
        points.append(f"{x(t):.1f},{y(v):.1f}")
    px, py = x(line["peak_time_ms"]), y(allocator["peak_bytes"])
    label = escape.html(f"peak {size(allocator['peak_bytes'])} at {allocator['time_ms']:.3f} ms")
    parts = [f'<svg width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" role="img" '
             f'aria-label="{escape.html("bytes in use of allocator " + allocator["allocator"])}">',
             f'<polyline class="line" points="{" ".join(points)}"/>',
             f'<circle class="peak" cx="{px:.1f}" cy="{py:.1f}" r="4"/>',
             f'<text x="{min(px + 6, _W - 200):.1f}" y="{max(py - 6, 12):.1f}" font-size="11">{label}</text>',
             f'<text x="2" y="12" font-size="10">{escape.html(size(top))}</text>',
             f'<text x="{_PAD}" y="{_H - 2}" font-size="10">{escape.html(f"{t0:.1f} ms")}</text>',
             f'<text x="{_W - _PAD - 60}" y="{_H - 2}" font-size="10">{escape.html(f"{t1:.1f} ms")}</text>']
    if capacity and capacity <= top:
        parts.append(f'<line class="cap" x1="{_PAD}" x2="{_W - _PAD}" y1="{y(capacity):.1f}" y2="{y(capacity):.1f}">'
                     f'<title>{escape.html("capacity " + size(capacity))}</title></line>')
    return "".join(parts) + "</svg>"


def render(doc: dict[str, Any]) -> str:
    parts = ["<!doctype html><html><head><meta charset=\"utf-8\"><title>tpudoctor memory</title>",
             f"<style>{_STYLE}</style></head><body>", f"<h1>{escape.html(headline(doc))}</h1>", "<h2>Findings</h2><ul>"]
    for raw in doc["findings"]:
        f = Finding.from_dict(raw)
        parts.append(f"<li class=\"{f.status.value}\">{escape.html(MARKERS[f.status])} <b>{escape.html(f.title)}</b>: "
                     f"{escape.html(f.message)}")
        if f.remediation and f.status in (Status.FAIL, Status.WARN, Status.ERROR):
            parts += [f"<br>fix: {escape.html(t)}" for t in f.remediation.text.splitlines() if t]
            parts += [f"<br><code>{escape.html(c)}</code>" for c in f.remediation.commands]
        parts.append("</li>")
    parts.append("</ul>")
    for host in doc["hosts"]:
        parts.append(f"<h2>{escape.html(host['host'])}</h2><p>Capture: <code>{escape.html(host['source'])}</code></p>")
        parts += [f"<p>note: {escape.html(n)}</p>" for n in host["notes"]]
        if host["allocators"]:
            parts.append(_table(ALLOCATOR_COLUMNS, [allocator_row(a) for a in host["allocators"]]))
        for a in host["allocators"]:
            parts.append(f"<h3>Allocator {escape.html(a['allocator'])}</h3>{plot(a)}")
            if a["peak_buffers"]:
                parts.append("<p>Buffers live at the peak:</p>"
                             + _table(BUFFER_COLUMNS, [buffer_row(b) for b in a["peak_buffers"]]))
        for p in host["programs"]:
            parts.append(f"<h3>Program <code>{escape.html(p['program'])}</code></h3><p>{escape.html(p['why'])}; "
                         f"footprint {escape.html(size(p['attribution']['peak_bytes']))}</p>")
            parts.append(_table(BUCKET_COLUMNS, bucket_rows(p)))
            parts.append("<p>Fixes, best first:</p>" + _table(FIX_COLUMNS, [fix_row(f) for f in p["fixes"]])
                         if p["fixes"] else "<p>No fix saves 2% of the peak or more.</p>")
    for text in doc["texts"]:
        parts.append(f"<h2>{escape.html(text['source'])}</h2>")
        for listing in text["listings"]:
            parts.append(f"<p><b>{escape.html(listing_header(listing))}</b></p>")
            if listing["allocations"]:
                parts.append(_table(LISTING_COLUMNS, [listing_row(a) for a in listing["allocations"]]))
            parts += [f"<p>does not add up: {escape.html(p)}</p>" for p in listing["problems"]]
            parts.append(f"<p>fixes: unknown ({escape.html(listing['fixes_why'])})</p>")
    for profile in doc.get("profiles") or []:
        parts.append(f"<h2>{escape.html(profile_title(profile))}</h2>")
        parts.append(_table(PROFILE_DEVICE_COLUMNS, [profile_device_row(d) for d in profile["devices"]]))
        if profile["top_sites"]:
            parts.append("<p>Where the bytes were made:</p>"
                         + _table(SITE_COLUMNS, [site_row(t) for t in profile["top_sites"]]))
    pod = doc["pod"]
    parts.append("<h2>Chips across the pod</h2>")
    if pod["chips"]:
        parts.append(_table(CHIP_COLUMNS, [chip_row(c) for c in pod["chips"]]))
    parts.append(f"<p>Outliers: {escape.html(pod['verdict'])}</p>")
    return "".join(parts) + "</body></html>\n"
