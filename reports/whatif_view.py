"""The straggler what-if in HTML: the critical path of the first steps as an inline SVG, and each
host's saving (``analyses.straggler_whatif`` of a profile document, ``analysis.whatif``)."""

from __future__ import annotations

from tpudoctor.reports import escape

COMPUTE, COLLECTIVE, CRITICAL = "#90a4ae", "#c5cae9", "#c62828"
MAX_ROWS = 32


def _e(value) -> str:
    return escape.html(str(value))


def summary_line(w: dict) -> str:
    if w.get("status") != "known":
        return f"Straggler what-if unknown: {w.get('reason')}"
    top = (w.get("per_host") or [{}])[0]
    line = (f"{w['steps']} steps of {w['hosts']} hosts replayed as a chain of sync points: "
            f"{w['simulated_step_ms']:.2f} ms per step (measured {w['measured_step_ms']:.2f} ms"
            + (f"; waits predicted from typical transfers: {w['modelled_step_ms']:.2f} ms, "
               f"{w['model_error_percent']:+.1f}%" if w.get("modelled_step_ms") is not None else "")
            + f"), {w['ideal_step_ms']:.2f} ms with every device's compute segments at their median")
    priced = [r for r in w.get("per_host") or [] if r.get("priced")]
    if priced:
        top = max(priced, key=lambda r: r.get("persistent_saved_ms") or 0)
        since = f" since step {top['onset_step']}" if top.get("onset_step") is not None else ""
        kind = f" ({top['time_class']} time)" if top.get("time_class") not in (None, "", "unknown") else ""
        line += (f"; {top['host']} is persistently slow{kind}{since}: removing its excess would save "
                 f"{top['persistent_saved_ms']:.2f} ms per step ({top['persistent_saved_percent']:.1f}%; all its "
                 f"segments at the median: {top['saved_ms']:.2f} ms)")
    elif top.get("host") is not None and (w.get("slowdown_ms") or 0) > 0:
        line += (f"; no host is persistently slow: the {w.get('spread_ms') or w['slowdown_ms']:.2f} ms slowdown "
                 "is spread across the hosts (random imbalance, nothing to fix on one host)")
    return line + "."


def critical_path_svg(w: dict, width: int = 1040) -> str:
    """One row per host (and chip), its compute segments and collective waits of the first steps
    as bars; the critical path (the last arrival at each sync point) in red."""
    rows = w.get("timeline") or []
    if not rows:
        return ""
    lanes: list[tuple[str, str]] = []
    for r in rows:
        lane = (r["host"], r["chip"])
        if lane not in lanes:
            lanes.append(lane)
    lanes = lanes[:MAX_ROWS]
    several = len({c for _, c in lanes}) > 1 or len(lanes) != len({h for h, _ in lanes})
    end = max(float(r["end_ms"]) for r in rows) or 1.0
    left, lane_h, top = 150, 16, 18
    height = top + lane_h * len(lanes) + 24
    scale = (width - left - 10) / end
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           'aria-label="critical path of the first steps">',
           f'<text x="{left}" y="12">0 ms</text><text x="{width - 10}" y="12" text-anchor="end">{end:.1f} ms</text>']
    for i, (host, chip) in enumerate(lanes):
        y = top + i * lane_h
        label = f"{host} {chip}" if several else host
        out.append(f'<text x="{left - 6}" y="{y + 11}" text-anchor="end">{_e(label)}</text>')
        for r in rows:
            if (r["host"], r["chip"]) != (host, chip):
                continue
            x0, x1 = left + float(r["start_ms"]) * scale, left + float(r["end_ms"]) * scale
            critical = bool(r.get("critical")) and r["kind"] == "compute"
            color = CRITICAL if critical else (COMPUTE if r["kind"] == "compute" else COLLECTIVE)
            mark = ' class="critical"' if critical else ""
            out.append(f'<rect x="{x0:.1f}" y="{y + 2}" width="{max(x1 - x0, 0.5):.1f}" height="{lane_h - 4}" '
                       f'fill="{color}"{mark}><title>{_e(r["segment"])}: '
                       f'{float(r["start_ms"]):.2f}-{float(r["end_ms"]):.2f} ms</title></rect>')
    y = top + lane_h * len(lanes) + 16
    out.append(f'<rect x="{left}" y="{y - 9}" width="10" height="10" fill="{CRITICAL}"/>'
               f'<text x="{left + 14}" y="{y}">critical path (last arrival)</text>'
               f'<rect x="{left + 200}" y="{y - 9}" width="10" height="10" fill="{COMPUTE}"/>'
               f'<text x="{left + 214}" y="{y}">own compute</text>'
               f'<rect x="{left + 310}" y="{y - 9}" width="10" height="10" fill="{COLLECTIVE}"/>'
               f'<text x="{left + 324}" y="{y}">in the collective (waiting, transfer)</text>')
    out.append("</svg>")
    return "".join(out)


def section(w: dict, table) -> str:
    """The HTML section; ``table(rows, columns)`` renders a sortable table."""
    parts = ["<h2>What the straggler costs</h2>", f'<p class="note">{_e(summary_line(w))}</p>']
    if w.get("status") == "known":
        parts.append(critical_path_svg(w))
        parts.append(table(w.get("per_host") or [],
                           [("host", "host"), ("persistent_saved_ms", "step ms saved, persistent excess removed"),
                            ("persistent_saved_percent", "% of step"), ("priced", "priced"),
                            ("p_value", "sign test p"), ("onset_step", "since step"), ("time_class", "kind of time"),
                            ("saved_ms", "all segments at the median (noise included)"),
                            ("slowdown_share", "share of the slowdown"), ("critical_segments", "critical segments")]))
        if w.get("per_chip"):
            parts.append(table(w["per_chip"], [("host", "host"), ("chip", "chip"), ("saved_ms", "step ms saved"),
                                               ("saved_percent", "% of step"), ("slowdown_share", "share")]))
    return "".join(parts)
