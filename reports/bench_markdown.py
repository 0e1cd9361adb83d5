"""Bench result as Markdown, for ``$GITHUB_STEP_SUMMARY`` or a PR comment (asv-style before/after table)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.reports.bench_summary import headline, loss_line, mismatch_lines, verdict_line
from tpudoctor.reports.escape import markdown as md
from tpudoctor.reports.escape import markdown_code as code


def render(document: Mapping[str, Any]) -> str:
    key = document["key"]
    m = document["measurement"]
    lines = ["# tpudoctor bench", "", md(headline(document)), ""]
    verdict = verdict_line(document)
    comparison = document.get("comparison")
    if comparison:
        g = comparison["gate"]
        mark = {"regression": "❌", "unknown": "⚠️"}.get(g["verdict"], "✅")
        lines += [f"**{mark} {md(verdict)}**", "",
                  "| metric | baseline | current | ratio |", "|---|---:|---:|---:|",
                  f"| examples/s (median) | {g['baseline_median']:,.1f} | {g['current_median']:,.1f} | "
                  f"{'' if g['significant'] else '~'}{g['ratio']:.3f} |", ""]
        mismatches = mismatch_lines(document)
        if mismatches:
            lines += ["Compared across different keys (`--allow-mismatch`):", ""] + [f"- {md(x)}" for x in mismatches] + [""]
    lines += [
        "| | |", "|---|---|",
        f"| compile (first step) | {m['compile_time_ms']:,.0f} ms |",
        f"| steady step time (median) | {m['step_time_ms_median']:.3f} ms |",
        f"| windows | {m['windows']} x {m['steps_per_window']} steps |",
        f"| loss | {md(loss_line(document))} |",
        f"| model version | {code(key['model_version'], in_table=True)} |",
        f"| accelerator / topology | {code(key['accelerator_type'], in_table=True)} / "
        f"{code(key['topology'] or '-', in_table=True)} |",
        f"| framework | {md(key['framework'])} {md(key['framework_version'])} |",
        f"| libtpu | {md(key['libtpu_version'] or '-')} |",
        "",
    ]
    return "\n".join(lines)
