"""Bench result as Markdown, for ``$GITHUB_STEP_SUMMARY`` or a PR comment (asv-style before/after table)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.reports.bench_summary import headline, loss_line, mismatch_lines, verdict_line


def render(document: Mapping[str, Any]) -> str:
    key = document["key"]
    m = document["measurement"]
    lines = ["# tpudoctor bench", "", headline(document), ""]
    verdict = verdict_line(document)
    comparison = document.get("comparison")
    if comparison:
        g = comparison["gate"]
        mark = "❌" if g["verdict"] == "regression" else "✅"
        lines += [f"**{mark} {verdict}**", "",
                  "| metric | baseline | current | ratio |", "|---|---:|---:|---:|",
                  f"| examples/s (median) | {g['baseline_median']:,.1f} | {g['current_median']:,.1f} | "
                  f"{'' if g['significant'] else '~'}{g['ratio']:.3f} |", ""]
        mismatches = mismatch_lines(document)
        if mismatches:
            lines += ["Compared across different keys (`--allow-mismatch`):", ""] + [f"- {x}" for x in mismatches] + [""]
    lines += [
        "| | |", "|---|---|",
        f"| compile (first step) | {m['compile_time_ms']:,.0f} ms |",
        f"| steady step time (median) | {m['step_time_ms_median']:.3f} ms |",
        f"| windows | {m['windows']} x {m['steps_per_window']} steps |",
        f"| loss | {loss_line(document)} |",
        f"| model version | `{key['model_version']}` |",
        f"| accelerator / topology | `{key['accelerator_type']}` / `{key['topology'] or '-'}` |",
        f"| framework | {key['framework']} {key['framework_version']} |",
        f"| libtpu | {key['libtpu_version'] or '-'} |",
        "",
    ]
    return "\n".join(lines)
