"""The goodput report in Markdown (a pull request, a performance review)."""

from __future__ import annotations

from typing import Any

from tpudoctor.reports.escape import markdown as md
from tpudoctor.reports.escape import markdown_code, markdown_prose
from tpudoctor.reports.goodput_summary import (
    bucket_rows,
    fixes,
    gate_line,
    headline,
    seconds_text,
    step_line,
)


def _cell(value: Any) -> str:
    return md("" if value is None else value)


def render(doc: dict[str, Any]) -> str:
    g = doc["goodput"]
    out = ["# Where did the time go", "", f"**{md(headline(doc))}**", "", md(step_line(g)), ""]
    confidence = (g.get("consistency") or {}).get("confidence") or {}
    if confidence.get("level") in ("medium", "low"):
        out += [f"Confidence in the figures: {md(confidence['level'])}: {_cell('; '.join(confidence['reasons']))}", ""]
    out += ["| bucket | time | % of wall |", "|---|---:|---:|"]
    for row in bucket_rows(g):
        pct = f"{row['percent']:.2f}" if row["percent"] is not None else "n/a"
        out.append(f"| {md(row['bucket'])} ({_cell(row['label'])}) | {md(seconds_text(row['seconds']))} | {pct} |")
    nulls = g.get("nulls") or {}
    if nulls:
        out += ["", "Figures the log cannot support:", ""] + [f"- {markdown_code(k)}: {_cell(v)}" for k, v in nulls.items()]
    out += ["", "## Findings", ""]
    for f in doc.get("findings") or []:
        out.append(f"- **{md(f['status'])}** {_cell(f['title'])} ({markdown_code(f['id'])}): {_cell(f['message'])}")
        out += [f"  - {markdown_prose(x)}" for x in fixes(f)]
    if g.get("notes"):
        out += ["", "## Notes", ""] + [f"- {_cell(n)}" for n in g["notes"]]
    line = gate_line(doc)
    if line:
        out += ["", f"**{md(line)}**"]
    return "\n".join(out) + "\n"
