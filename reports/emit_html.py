"""A view as one self-contained HTML page (no external assets): the title, each section under its heading,
findings as a list with their fixes, tables, preformatted blocks, and the charts (bars drawn in SVG)."""

from __future__ import annotations

import math

from tpudoctor.reports.escape import html as e
from tpudoctor.reports.view import Chart, Section, Shown, Table, View, shown

STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;color:#1f2328}"
         "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;"
         "vertical-align:top}.r{text-align:right}.PASS{color:#1a7f37}.WARN{color:#9a6700}.FAIL{color:#cf222e}"
         ".SKIP{color:#6e7781}.ERROR{color:#8250df}.marked{background:#fff8c5}"
         ".box{border:2px solid #cf222e;border-radius:6px;padding:0 1em;margin:1em 0}"
         "pre,code{background:#f6f8fa}pre{padding:.5em;overflow-x:auto}.bar{fill:#69c}.bar.marked{fill:#cf222e}")
SPAN_FILL = {True: "#c62828", False: "#c5cae9"}
GROUP_FILLS = ("#5d4037", "#8d6e63", "#6a1b9a", "#2e7d32", "#ad1457", "#ef6c00", "#f9a825", "#263238", "#c62828",
               "#9e9e9e", "#1565c0", "#00838f")
"""A span group's colour, in the order the groups first appear (goodput: initialisation, preparation, compilation,
productive steps, ...)."""
BAR_WIDTH = 400


def emit(view: View) -> str:
    parts = ["<!doctype html><html><head><meta charset=\"utf-8\">", f"<title>tpudoctor {e(view.kind)}</title>",
             f"<style>{STYLE}</style></head><body>", f"<h1>{e(view.title)}</h1>"]
    parts += [f"<p>{e(note)}</p>" for note in view.notes]
    for section in view.sections:
        parts += _section(section)
    return "\n".join(parts) + "\n</body></html>\n"


def _section(section: Section) -> list[str]:
    parts = ["<div class=\"box\">" if section.marked else ""]
    if section.title:
        parts.append(f"<h{section.level}>{e(section.title)}</h{section.level}>")
    parts += [f"<p>{e(note)}</p>" for note in section.notes]
    if section.findings:
        parts += ["<ul>", *map(_finding, shown(section)), "</ul>"]
    if section.table is not None:
        parts.append(table_html(section.table))
    if section.code or section.commands:
        parts.append("<pre>" + e("\n".join([*section.code, *section.commands])) + "</pre>")
    if section.chart is not None:
        parts.append(chart_svg(section.chart))
    if section.marked:
        parts.append("</div>")
    return [p for p in parts if p]


def _finding(shown: Shown) -> str:
    out = [f"<li class=\"{shown.status.value}\">{e(shown.line)}"]
    if shown.brief:
        return out[0] + " (see above)</li>"
    out += [f"<br>{e(shown.confidence)}"] if shown.confidence else []
    out += [f"<br>fix: {e(line)}" for line in shown.fixes]
    out += [f"<br><code>{e(c)}</code>" for c in shown.commands]
    out += [f"<br>docs: {e(shown.docs)}"] if shown.docs else []
    if shown.evidence:
        out.append("<details><summary>evidence</summary><pre>" + e("\n".join(shown.evidence)) + "</pre></details>")
    return "".join(out) + "</li>"


def table_html(table: Table) -> str:
    right = [i < len(table.align) and table.align[i] == "r" for i in range(len(table.columns))]
    head = "".join(f"<th>{e(c)}</th>" for c in table.columns)
    rows = []
    for n, row in enumerate(table.rows):
        cells = "".join(f"<td class=\"r\">{e(c)}</td>" if r else f"<td>{e(c)}</td>"
                        for c, r in zip(row, right, strict=True))
        rows.append(f"<tr class=\"marked\">{cells}</tr>" if n in table.marked_rows else f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>" + "".join(rows) + "</table>"


def chart_svg(chart: Chart) -> str:
    if chart.points:
        return roofline_svg(chart)
    return line_svg(chart) if chart.line else spans_svg(chart) if chart.spans else bars_svg(chart)


def roofline_svg(chart: Chart, width: int = 760, height: int = 420) -> str:
    """Log-log: the HBM roof rising to the ridge, the compute roof flat after it; a circle per point (area by its
    share), the marked point a diamond; ``legend[0]`` said under it."""
    peak_flops, peak_hbm = chart.roofs
    ridge = peak_flops / peak_hbm
    xs, ys = [p.x for p in chart.points], [p.y for p in chart.points]
    x_lo, x_hi = math.floor(math.log10(min(xs + [ridge]))) - 1, math.ceil(math.log10(max(xs + [ridge]))) + 1
    y_hi = math.ceil(math.log10(peak_flops))
    y_lo = min(math.floor(math.log10(min(ys + [peak_hbm * 10 ** x_lo]))), y_hi - 1)
    left, top, plot_w, plot_h = 70, 20, width - 90, height - 70

    def px(x: float) -> float:
        return left + plot_w * (math.log10(x) - x_lo) / (x_hi - x_lo)

    def py(y: float) -> float:
        return top + plot_h * (1 - (math.log10(y) - y_lo) / (y_hi - y_lo))

    out = [f"<h3>{e(chart.title)}</h3>", f'<svg role="img" aria-label="{e(chart.title)}" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" font-size="11" class="roofline">'
           f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#e0e0e0"/>']
    out += [f'<text x="{px(10.0 ** k):.1f}" y="{top + plot_h + 16}" text-anchor="middle">1e{k}</text>'
            for k in range(x_lo, x_hi + 1)]
    out += [f'<text x="{left - 6}" y="{py(10.0 ** k) + 4:.1f}" text-anchor="end">1e{k}</text>' for k in range(y_lo, y_hi + 1)]
    out.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 8}" text-anchor="middle">operational intensity '
               f'(FLOPs per HBM byte, log)</text><text x="14" y="{top + plot_h / 2:.0f}" transform="rotate(-90 14 '
               f'{top + plot_h / 2:.0f})" text-anchor="middle">FLOP rate (FLOP/s, log)</text>')
    y0 = max(peak_hbm * 10.0 ** x_lo, 10.0 ** y_lo)
    x0 = y0 / peak_hbm
    out.append(f'<line class="roof-memory" x1="{px(x0):.1f}" y1="{py(y0):.1f}" x2="{px(ridge):.1f}" '
               f'y2="{py(peak_flops):.1f}" stroke="#1565c0" stroke-width="2.5"><title>HBM roof</title></line>'
               f'<line class="roof-compute" x1="{px(ridge):.1f}" y1="{py(peak_flops):.1f}" x2="{left + plot_w}" '
               f'y2="{py(peak_flops):.1f}" stroke="#2e7d32" stroke-width="2.5"><title>compute roof</title></line>')
    colours = {"compute": "#2e7d32", "hbm": "#1565c0"}
    for p in chart.points:
        x, y = px(p.x), py(p.y)
        if p.marked:
            out.append(f'<path class="program" d="M{x - 7:.1f},{y:.1f} L{x:.1f},{y - 7:.1f} L{x + 7:.1f},{y:.1f} '
                       f'L{x:.1f},{y + 7:.1f} Z" fill="#c62828"><title>{e(p.text)}</title></path>')
            continue
        out.append(f'<circle class="op" cx="{x:.1f}" cy="{y:.1f}" r="{3 + 14 * math.sqrt(max(p.area, 0.0) / 100):.1f}" '
                   f'fill="{colours.get(p.group, "#ef6c00")}" fill-opacity="0.55" stroke="#424242" stroke-width="0.6">'
                   f"<title>{e(p.text)}</title></circle>")
    return "".join(out) + f"</svg><p>{e(chart.legend[0])}</p>"


def spans_svg(chart: Chart, width: int = 1040) -> str:
    """One lane per ``lane`` in order of first appearance, each span a bar (marked ones red), a legend under."""
    lanes = list(dict.fromkeys(s.lane for s in chart.spans))
    end = max(s.end for s in chart.spans) or 1.0
    left, lane_h, top = 150, 16, 18
    height = top + lane_h * len(lanes) + 24
    scale = (width - left - 10) / end
    out = [f"<h3>{e(chart.title)}</h3>", f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'role="img" aria-label="{e(chart.title)}" font-size="11"><text x="{left}" y="12">{e(chart.axis[1])}</text>'
           f'<text x="{width - 10}" y="12" text-anchor="end">{e(chart.axis[2])}</text>']
    out += [f'<text x="{left - 6}" y="{top + i * lane_h + 11}" text-anchor="end">{e(lane)}</text>'
            for i, lane in enumerate(lanes)]
    groups = list(dict.fromkeys(s.group for s in chart.spans if s.group))
    fill = {g: GROUP_FILLS[i % len(GROUP_FILLS)] for i, g in enumerate(groups)}
    out += [f'<rect class="{"band" if s.group else "critical"}" fill="{fill.get(s.group) or SPAN_FILL[s.marked]}" '
            f'x="{left + s.start * scale:.1f}" y="{top + lanes.index(s.lane) * lane_h + 2}" '
            f'width="{max((s.end - s.start) * scale, 0.5):.1f}" height="{lane_h - 4}"><title>{e(s.text)}</title></rect>'
            for s in chart.spans]
    y = top + lane_h * len(lanes) + 16
    if groups:  # a legend line of its own under the lanes
        return "".join(out) + "</svg><p>" + " ".join(
            f'<svg width="10" height="10"><rect fill="{fill[g]}" width="10" height="10"/></svg> {e(g)}'
            for g in groups) + "</p>"
    out.append(f'<rect fill="{SPAN_FILL[True]}" x="{left}" y="{y - 9}" width="10" height="10"/><text x="{left + 14}" '
               f'y="{y}">{e(chart.legend[0])}</text><rect fill="{SPAN_FILL[False]}" x="{left + 230}" y="{y - 9}" width="10" '
               f'height="10"/><text x="{left + 244}" y="{y}">{e(chart.legend[1])}</text>')
    return "".join(out) + "</svg>"


def line_svg(chart: Chart, width: int = 640, height: int = 160, pad: int = 40) -> str:
    """A step line (a value holds until the next point), the peak marked, the limit dashed where it is in scale."""
    xs, ys = [x for x, _ in chart.line], [y for _, y in chart.line]
    x0, span = min(xs), (max(xs) - min(xs)) or 1.0
    top = max(max(ys), chart.peak.value if chart.peak else 0, chart.limit.value if chart.limit else 0, 1)

    def px(x: float) -> float:
        return pad + (x - x0) / span * (width - 2 * pad)

    def py(y: float) -> float:
        return height - pad / 2 - y / top * (height - pad)

    points = [f"{px(x):.1f},{py(y):.1f}" for x, y in chart.line]
    steps = [p for i, (x, _) in enumerate(chart.line) for p in
             ([f"{px(x):.1f},{py(chart.line[i - 1][1]):.1f}"] if i else []) + [points[i]]]
    out = [f"<h3>{e(chart.title)}</h3>", f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'role="img" aria-label="{e(chart.title)}" style="background:#fafafa">',
           f'<polyline class="line" fill="none" stroke="#36c" stroke-width="1.5" points="{" ".join(steps)}"/>',
           f'<text x="2" y="12" font-size="10">{e(chart.axis[0])}</text>',
           f'<text x="{pad}" y="{height - 2}" font-size="10">{e(chart.axis[1])}</text>',
           f'<text x="{width - pad - 60}" y="{height - 2}" font-size="10">{e(chart.axis[2])}</text>']
    if chart.peak is not None:
        x, y = px(float(chart.peak.label)), py(chart.peak.value)
        out.append(f'<circle class="peak" fill="#b00" cx="{x:.1f}" cy="{y:.1f}" r="4"/><text x="{min(x + 6, width - 200):.1f}" '
                   f'y="{max(y - 6, 12):.1f}" font-size="11">{e(chart.peak.text)}</text>')
    if chart.limit is not None:
        y = py(chart.limit.value)
        out.append(f'<line class="cap" stroke="#b00" stroke-dasharray="4" x1="{pad}" x2="{width - pad}" y1="{y:.1f}" y2="{y:.1f}">'
                   f"<title>{e(chart.limit.text)}</title></line>")
    return "".join(out) + "</svg>"


def bars_svg(chart: Chart) -> str:
    """One bar per item, scaled to the largest; the label left of it, its value right."""
    top = max((b.value for b in chart.bars), default=0) or 1
    row, label_w = 20, 160
    height = row * len(chart.bars) + 10
    out = [f"<h3>{e(chart.title)}</h3>",
           f"<svg width=\"{label_w + BAR_WIDTH + 120}\" height=\"{height}\" role=\"img\" aria-label=\"{e(chart.title)}\">"]
    for i, bar in enumerate(chart.bars):
        y = 5 + i * row
        width = max(BAR_WIDTH * bar.value / top, 0)
        out.append(f"<text x=\"0\" y=\"{y + 13}\">{e(bar.label)}</text>"
                   f"<rect class=\"bar{' marked' if bar.marked else ''}\" x=\"{label_w}\" y=\"{y}\" "
                   f"width=\"{width:.0f}\" height=\"14\"></rect>"
                   f"<text x=\"{label_w + width + 6:.0f}\" y=\"{y + 13}\">{e(bar.text)}</text>")
    return "".join(out) + "</svg>"
