"""The op-trace what-if report (``tpudoctor profile analyze trace.parquet``) in text, markdown, HTML and
JSON: the slowdown S, what it comes from (a persistently slow worker, the last stage, or random
imbalance spread across workers), the slowdown per op type, dp rank and stage, M_W and M_S, each
worker's saving, and the critical path of the slowest step (drawn in HTML)."""

from __future__ import annotations

import json

from tpudoctor.reports import escape

MAX_GROUP_ROWS = 8
MAX_WORKER_ROWS = 12
MAX_LANES = 32
COMPUTE, COMM = "#c62828", "#c5cae9"


def _f(value, spec: str = ".3f") -> str:
    return "-" if value is None else format(float(value), spec)


def headline(d: dict) -> list[str]:
    """The sentences every format opens with."""
    w = d["whatif"]
    if w["status"] != "known":
        return [f"What-if unknown: {w['reason']}"]
    meta = w.get("meta") or {}
    sizes = " x ".join(f"{k[:-5]} {meta[k]}" for k in ("dp_size", "pp_size", "tp_size") if k in meta)
    lines = [f"{w['workers']} workers{f' ({sizes})' if sizes else ''}, {w['steps']} steps replayed as a dependency "
             f"graph (pipeline sends/receives, data-parallel and global collectives): {_f(w['simulated_step_ms'], '.1f')} "
             f"ms per step, {_f(w['ideal_step_ms'], '.1f')} ms with every op at its type's typical duration: "
             f"slowdown S = {_f(w['slowdown'])}."]
    priced = w.get("priced_workers") or []
    if w["cause"] == "persistent worker":
        for r in priced[:3]:
            since = f" since step {r['onset_step']}" if r.get("onset_step") is not None else ""
            lines.append(f"Straggler: rank {r['rank']} (dp rank {r['dp_rank']}, stage {r['stage']}) is persistently "
                         f"slow{since} ({r['time_class']}): removing its persistent excess saves "
                         f"{_f(r['persistent_saved_ms'], '.1f')} ms per step ({_f(r['persistent_saved_percent'], '.1f')}%); "
                         f"all its ops at the typical duration: {_f(r['saved_ms'], '.1f')} ms.")
    elif w["cause"] == "stage imbalance":
        lines.append(f"Stage imbalance: fixing the last stage (stage {w['m_s_stage']}) removes M_S = {_f(w['m_s'])} of "
                     "the slowdown; no single worker's excess is persistent and large enough to name.")
    elif w["cause"] == "random imbalance":
        lines.append(f"The slowdown (S = {_f(w['slowdown'])}) is spread across the workers (random imbalance): no "
                     "worker's excess over its stage peers is persistent beyond noise, so no host is named.")
    else:
        lines.append("No slowdown beyond noise.")
    lines.append(f"M_W = {_f(w['m_w'])} (fixing the worst worker, rank {w['m_w_worker']}); "
                 f"M_S = {_f(w['m_s'])} (fixing the last stage, stage {w['m_s_stage']}).")
    return lines


def _groups(w: dict) -> list[tuple[str, list[tuple[str, str]]]]:
    return [(title, [(str(r["group"]), _f(r["slowdown"])) for r in w.get(key, [])[:MAX_GROUP_ROWS]])
            for title, key in (("op type", "by_optype"), ("dp rank", "by_dp_rank"), ("stage", "by_stage"))]


WORKER_COLUMNS = (("rank", "rank"), ("dp_rank", "dp"), ("stage", "stage"),
                  ("persistent_saved_ms", "saved ms (persistent excess)"), ("priced", "priced"),
                  ("p_value", "sign test p"), ("onset_step", "since step"), ("time_class", "kind"),
                  ("saved_ms", "saved ms (all ops typical, noise included)"))


def _workers(w: dict) -> list[dict]:
    return (w.get("per_worker") or [])[:MAX_WORKER_ROWS]


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"
    return "-" if value is None else str(value)


def _path_summary(w: dict) -> str:
    path = w.get("critical_path") or []
    if not path:
        return ""
    ranks: dict[int, int] = {}
    for r in path:
        ranks[r["rank"]] = ranks.get(r["rank"], 0) + 1
    top = ", ".join(f"rank {k} {v}" for k, v in sorted(ranks.items(), key=lambda kv: -kv[1])[:5])
    return (f"Critical path of the slowest step (step {w.get('critical_step')}): {len(path)} ops, "
            f"{_f(path[-1]['end_ms'], '.1f')} ms; ops per worker on it: {top}.")


def text(d: dict) -> str:
    w = d["whatif"]
    out = [f"tpudoctor profile analyze: op trace {d['source']}", ""] + headline(d)
    if w["status"] == "known":
        for title, rows in _groups(w):
            out += ["", f"Slowdown with only one {title} as recorded (S_G):"]
            out += [f"  {name:<28} {value}" for name, value in rows]
        out += ["", "Workers (largest all-typical saving first):",
                "  " + " | ".join(label for _, label in WORKER_COLUMNS)]
        out += ["  " + " | ".join(_cell(r.get(k)) for k, _ in WORKER_COLUMNS) for r in _workers(w)]
        out += ["", _path_summary(w)]
    return "\n".join(out) + "\n"


def markdown(d: dict) -> str:
    w = d["whatif"]
    md = escape.markdown
    out = ["# tpudoctor profile analyze: op trace", "", f"Source: {escape.markdown_code(d['source'])}", ""]
    for line in headline(d):
        out += [md(line), ""]
    if w["status"] == "known":
        for title, rows in _groups(w):
            out += ["", f"## Slowdown with only one {title} as recorded", "", f"| {title} | S_G |", "|---|---|"]
            out += [f"| {md(name)} | {value} |" for name, value in rows]
        out += ["", "## Workers", "", "| " + " | ".join(label for _, label in WORKER_COLUMNS) + " |",
                "|" + "---|" * len(WORKER_COLUMNS)]
        out += ["| " + " | ".join(md(_cell(r.get(k))) for k, _ in WORKER_COLUMNS) + " |" for r in _workers(w)]
        out += ["", "## Critical path", "", md(_path_summary(w))]
    return "\n".join(out) + "\n"


def critical_path_svg(w: dict, width: int = 1040) -> str:
    """One lane per worker on the critical path of the slowest step; its ops on the path as bars,
    compute red, communication (waiting and transfer) light."""
    path = w.get("critical_path") or []
    if not path:
        return ""
    lanes: list[int] = []
    for r in path:
        if r["rank"] not in lanes:
            lanes.append(r["rank"])
    lanes = sorted(lanes)[:MAX_LANES]
    end = max(float(r["end_ms"]) for r in path) or 1.0
    left, lane_h, top = 150, 16, 18
    height = top + lane_h * len(lanes) + 24
    scale = (width - left - 10) / end
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           'aria-label="critical path of the slowest step">',
           f'<text x="{left}" y="12">0 ms</text><text x="{width - 10}" y="12" text-anchor="end">{end:.1f} ms</text>']
    for i, rank in enumerate(lanes):
        y = top + i * lane_h
        first = next(r for r in path if r["rank"] == rank)
        out.append(f'<text x="{left - 6}" y="{y + 11}" text-anchor="end">rank {rank} (dp {first["dp_rank"]}, '
                   f'stage {first["stage"]})</text>')
        for r in path:
            if r["rank"] != rank:
                continue
            x0, x1 = left + float(r["start_ms"]) * scale, left + float(r["end_ms"]) * scale
            compute = "compute" in r["optype"] or r["optype"] == "optimizer"
            out.append(f'<rect x="{x0:.1f}" y="{y + 2}" width="{max(x1 - x0, 0.5):.1f}" height="{lane_h - 4}" '
                       f'fill="{COMPUTE if compute else COMM}" class="critical"><title>'
                       f'{escape.html(r["optype"])} #{r["seq_id"]}: {float(r["start_ms"]):.2f}-'
                       f'{float(r["end_ms"]):.2f} ms</title></rect>')
    y = top + lane_h * len(lanes) + 16
    out.append(f'<rect x="{left}" y="{y - 9}" width="10" height="10" fill="{COMPUTE}"/>'
               f'<text x="{left + 14}" y="{y}">compute on the critical path</text>'
               f'<rect x="{left + 230}" y="{y - 9}" width="10" height="10" fill="{COMM}"/>'
               f'<text x="{left + 244}" y="{y}">communication on it (send/receive, collective)</text></svg>')
    return "".join(out)


def html(d: dict) -> str:
    w = d["whatif"]
    e = escape.html
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>tpudoctor op-trace what-if</title>',
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
             "padding:2px 6px}svg text{font-size:11px}</style></head><body>",
             "<h1>What the stragglers cost</h1>", f"<p>Op trace <code>{e(d['source'])}</code></p>"]
    parts += [f"<p>{e(line)}</p>" for line in headline(d)]
    if w["status"] == "known":
        parts += ["<h2>Critical path</h2>", f"<p>{e(_path_summary(w))}</p>", critical_path_svg(w)]
        for title, rows in _groups(w):
            parts.append(f"<h2>Slowdown with only one {e(title)} as recorded</h2><table><tr><th>{e(title)}</th>"
                         "<th>S_G</th></tr>" + "".join(f"<tr><td>{e(n)}</td><td>{v}</td></tr>" for n, v in rows)
                         + "</table>")
        parts.append("<h2>Workers</h2><table><tr>" + "".join(f"<th>{e(label)}</th>" for _, label in WORKER_COLUMNS)
                     + "</tr>" + "".join("<tr>" + "".join(f"<td>{e(_cell(r.get(k)))}</td>" for k, _ in WORKER_COLUMNS)
                                         + "</tr>" for r in _workers(w)) + "</table>")
    parts.append("</body></html>")
    return "".join(parts) + "\n"


def render(document: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(document, indent=2, default=str) + "\n"
    return {"text": text, "markdown": markdown, "html": html}[fmt](document)
