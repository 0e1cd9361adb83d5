"""Renders ``tpudoctor compare`` results: text, JSON, or markdown for a pull-request review."""

from __future__ import annotations

import json

ARROWS = {"better": "better", "worse": "WORSE", "same": "same", "n/a": "n/a"}


def render(result: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(result, indent=2) + "\n"
    if fmt == "markdown":
        return _markdown(result)
    return _text(result)


def _v(x) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.2f}" if isinstance(x, float) else str(x)


def _delta(row) -> str:
    if row["delta"] is None:
        return "n/a"
    pct = f" ({row['delta_percent']:+.1f}%)" if row["delta_percent"] is not None else ""
    return f"{row['delta']:+,.2f}{pct}"


def _verdict_line(result) -> str:
    if result["threshold_percent"] is None:
        return ""
    if result["regressed"]:
        return f"REGRESSION beyond {result['threshold_percent']:g}%: {', '.join(result['regressed_by'])}"
    return f"no regression beyond {result['threshold_percent']:g}%"


def _text(result) -> str:
    lines = [f"baseline  {result['baseline']['source']} ({result['baseline']['verdict']})",
             f"candidate {result['candidate']['source']} ({result['candidate']['verdict']})", ""]
    for r in result["kpis"]:
        lines.append(f"{r['kpi']:<28} {_v(r['baseline']):>12} -> {_v(r['candidate']):>12}  {_delta(r):>20}  "
                     f"{ARROWS[r['direction']]}")
    line = _verdict_line(result)
    return "\n".join(lines + ([""] + [line] if line else [])) + "\n"


def _markdown(result) -> str:
    lines = ["### tpudoctor profile comparison", "",
             f"Baseline `{result['baseline']['source']}` (**{result['baseline']['verdict']}**) vs candidate "
             f"`{result['candidate']['source']}` (**{result['candidate']['verdict']}**)", "",
             "| KPI | baseline | candidate | delta | |", "|---|---:|---:|---:|---|"]
    icons = {"better": ":white_check_mark: better", "worse": ":x: worse", "same": "same", "n/a": ""}
    for r in result["kpis"]:
        lines.append(f"| {r['kpi']} | {_v(r['baseline'])} | {_v(r['candidate'])} | {_delta(r)} | {icons[r['direction']]} |")
    if result["top_ops"]:
        lines += ["", "| top op | baseline self ms | candidate self ms | delta ms |", "|---|---:|---:|---:|"]
        for o in result["top_ops"]:
            lines.append(f"| `{o['name']}` | {_v(o['baseline_self_ms'])} | {_v(o['candidate_self_ms'])} | {_v(o['delta_ms'])} |")
    line = _verdict_line(result)
    if line:
        lines += ["", f"**{line}**"]
    return "\n".join(lines) + "\n"
