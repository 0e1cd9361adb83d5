"""The roofline section of a profile report, from its document's ``roofline``: plain-text lines (text
and markdown renderers) and the HTML chart (inline SVG, log-log: FLOPs per HBM byte against FLOP
rate, the compute and HBM roofs, one point per op sized by its time)."""

from __future__ import annotations

import math

from tpudoctor.reports import escape

MAX_OPS_SHOWN = 10


def si(value: float | None, unit: str) -> str:
    """1.23e12 -> '1.23 T<unit>'."""
    if value is None or not math.isfinite(value):
        return "n/a"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}%"


def peaks_line(r: dict) -> str:
    peaks = r["peaks"]
    source = "the capture's device plane" if peaks["source"] == "capture" else f"the {peaks['source'][6:]} table"
    return (f"peaks of {peaks.get('device_kind') or 'the device'} (from {source}): {si(peaks['flops_per_s'], 'FLOP/s')}, "
            f"HBM {si(peaks['hbm_bytes_per_s'], 'B/s')}")


def program_line(r: dict) -> str:
    p = r["program"]
    oi = p.get("hbm_operational_intensity_flops_per_byte")
    return (f"program: {si(p['flop_rate_flops_per_s'], 'FLOP/s')} ({_pct(p['compute_efficiency_percent'])} of peak), "
            f"MFU {_pct(p['mfu_percent'])}, HBM {si(p['hbm_bw_bytes_per_s'], 'B/s')} "
            f"({_pct(p['hbm_bw_utilization_percent'])} of peak), {'n/a' if oi is None else f'{oi:.3g}'} FLOP per HBM "
            f"byte, bound by {p['bound_by']}, roofline efficiency {_pct(p['roofline_efficiency_percent'])}")


UNMEASURABLE = "n/a*"
UNMEASURABLE_NOTE = ("* above the roof: the op's recorded time is too short for a rate (an async start such as "
                     "copy-start, or below the timer's resolution); JSON keeps xprof's figures")


def _unmeasurable(op: dict) -> bool:
    """A rate above the hardware's roof is not a measurement; xprof prints it anyway."""
    eff = op.get("roofline_efficiency_percent")
    return eff is not None and eff > 100.0


def op_rows(r: dict, limit: int = MAX_OPS_SHOWN) -> list[dict]:
    """The heaviest ops with their figures formatted."""
    rows = []
    for op in r["ops"][:limit]:
        oi = op.get("hbm_operational_intensity_flops_per_byte")
        if _unmeasurable(op):
            rows.append({"program": op.get("program") or "", "op": op["op_name"], "category": op.get("category") or "",
                         "bound": op["bound_by"],
                         "time %": f"{op.get('total_time_percent') or 0:.1f}", "FLOP rate": UNMEASURABLE,
                         "HBM bw": UNMEASURABLE, "FLOP/HBM byte": "n/a" if oi is None else f"{oi:.3g}",
                         "roofline eff.": UNMEASURABLE})
            continue
        rows.append({"program": op.get("program") or "", "op": op["op_name"], "category": op.get("category") or "",
                     "bound": op["bound_by"], "time %": f"{op.get('total_time_percent') or 0:.1f}",
                     "FLOP rate": si(op.get("flop_rate_flops_per_s"), "FLOP/s"),
                     "HBM bw": si(op.get("hbm_bw_bytes_per_s"), "B/s"),
                     "FLOP/HBM byte": "n/a" if oi is None else f"{oi:.3g}",
                     "roofline eff.": _pct(op.get("roofline_efficiency_percent"))})
    return rows


def roofline_lines(doc: dict) -> list[str]:
    r = doc.get("roofline")
    if not r:
        return []
    lines = ["Roofline and MFU:", f"  {peaks_line(r)}", f"  {program_line(r)}"]
    rows = op_rows(r)
    for row in rows:
        lines.append(f"  {str(row['program'])[:16]:<16} {str(row['op'])[:36]:<36} {row['bound']:<9} {row['time %']:>6}% {row['FLOP rate']:>14} "
                     f"{row['HBM bw']:>11} OI {row['FLOP/HBM byte']:>7} eff {row['roofline eff.']:>7}")
    if r.get("ops_total", 0) > MAX_OPS_SHOWN:
        lines.append(f"  ... {r['ops_total'] - MAX_OPS_SHOWN} more ops (all in --format json)")
    if any(row["roofline eff."] == UNMEASURABLE for row in rows):
        lines.append(f"  {UNMEASURABLE_NOTE}")
    return lines


def roofline_chart(r: dict | None, width: int = 760, height: int = 420) -> str:
    """Inline SVG roofline chart; a note where nothing can be plotted."""
    if not r:
        return '<p class="note">No roofline: the capture has no TPU ops with cost figures, or no known roofs.</p>'
    peak_flops, peak_hbm = r["peaks"]["flops_per_s"], r["peaks"]["hbm_bytes_per_s"]
    points = [(op["hbm_operational_intensity_flops_per_byte"], op["flop_rate_flops_per_s"],
               op.get("total_time_percent") or 0.0, op["op_name"], op["bound_by"]) for op in r["ops"]
              if (op.get("hbm_operational_intensity_flops_per_byte") or 0) > 0 and (op.get("flop_rate_flops_per_s") or 0) > 0]
    program = r["program"]
    has_program = ((program.get("hbm_operational_intensity_flops_per_byte") or 0) > 0
                   and (program.get("flop_rate_flops_per_s") or 0) > 0)
    not_plotted = len(r["ops"]) - len(points)
    xs = [p[0] for p in points] + ([program["hbm_operational_intensity_flops_per_byte"]] if has_program else [])
    ys = [p[1] for p in points] + ([program["flop_rate_flops_per_s"]] if has_program else [])
    ridge = peak_flops / peak_hbm
    x_lo = math.floor(math.log10(min(xs + [ridge]))) - 1
    x_hi = math.ceil(math.log10(max(xs + [ridge]))) + 1
    y_hi = math.ceil(math.log10(peak_flops)) + 0
    y_lo = min(math.floor(math.log10(min(ys + [peak_hbm * 10 ** x_lo]))), y_hi - 1)
    left, right, top, bottom = 70, 20, 20, 50
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + plot_w * (math.log10(x) - x_lo) / (x_hi - x_lo)

    def py(y: float) -> float:
        return top + plot_h * (1 - (math.log10(y) - y_lo) / (y_hi - y_lo))

    e = escape.html
    out = [f'<svg role="img" aria-label="roofline chart" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg" class="roofline">',
           f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#e0e0e0"/>']
    for k in range(x_lo, x_hi + 1):
        x = px(10.0 ** k)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle">1e{k}</text>')
    for k in range(y_lo, y_hi + 1):
        y = py(10.0 ** k)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">1e{k}</text>')
    out.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 8}" text-anchor="middle">operational intensity '
               '(FLOPs per HBM byte, log)</text>')
    out.append(f'<text x="14" y="{top + plot_h / 2:.0f}" transform="rotate(-90 14 {top + plot_h / 2:.0f})" '
               'text-anchor="middle">FLOP rate (FLOP/s, log)</text>')
    # memory roof: peak_hbm * x up to the ridge point; compute roof: flat from the ridge on
    x0 = 10.0 ** x_lo
    y0 = max(peak_hbm * x0, 10.0 ** y_lo)
    x0 = y0 / peak_hbm
    out.append(f'<line class="roof-memory" x1="{px(x0):.1f}" y1="{py(y0):.1f}" x2="{px(ridge):.1f}" y2="{py(peak_flops):.1f}" '
               'stroke="#1565c0" stroke-width="2.5"><title>HBM roof: ' + e(si(peak_hbm, "B/s")) + '</title></line>')
    out.append(f'<line class="roof-compute" x1="{px(ridge):.1f}" y1="{py(peak_flops):.1f}" x2="{left + plot_w}" '
               f'y2="{py(peak_flops):.1f}" stroke="#2e7d32" stroke-width="2.5"><title>compute roof: '
               + e(si(peak_flops, "FLOP/s")) + '</title></line>')
    out.append(f'<text x="{left + plot_w - 4}" y="{py(peak_flops) - 6:.1f}" text-anchor="end" fill="#2e7d32">'
               f'compute roof {e(si(peak_flops, "FLOP/s"))}</text>')
    out.append(f'<text x="{px(x0) + 6:.1f}" y="{py(y0) - 8:.1f}" fill="#1565c0">HBM roof {e(si(peak_hbm, "B/s"))}</text>')
    colors = {"compute": "#2e7d32", "hbm": "#1565c0"}
    for oi, rate, share, name, bound in points:
        radius = 3 + 14 * math.sqrt(max(share, 0.0) / 100)
        out.append(f'<circle class="op" cx="{px(oi):.1f}" cy="{py(rate):.1f}" r="{radius:.1f}" '
                   f'fill="{colors.get(bound, "#ef6c00")}" fill-opacity="0.55" stroke="#424242" stroke-width="0.6">'
                   f'<title>{e(str(name))}: {e(si(rate, "FLOP/s"))}, {oi:.3g} FLOP/HBM byte, {share:.1f}% of '
                   f'program time, bound by {e(bound)}</title></circle>')
    if has_program:
        x, y = px(program["hbm_operational_intensity_flops_per_byte"]), py(program["flop_rate_flops_per_s"])
        out.append(f'<path class="program" d="M{x - 7:.1f},{y:.1f} L{x:.1f},{y - 7:.1f} L{x + 7:.1f},{y:.1f} '
                   f'L{x:.1f},{y + 7:.1f} Z" fill="#c62828"><title>program: {e(program_line(r))}</title></path>')
    out.append("</svg>")
    note = (f'<p class="note">One circle per op (area by its share of program time; green compute-bound, blue '
            f'HBM-bound, orange other), the red diamond is the whole program. {peaks_line(r)}.'
            + (f" {not_plotted} op(s) without FLOPs or HBM bytes (copies, waits) cannot sit on a log axis and are "
               "not plotted." if not_plotted else "") + "</p>")
    return "".join(out) + note
