"""The goodput report in Markdown (a pull request, a performance review)."""

from __future__ import annotations

from typing import Any

from tpudoctor.reports.goodput_summary import (
    bucket_rows,
    fixes,
    gate_line,
    headline,
    seconds_text,
    step_line,
)


def _cell(value: Any) -> str:
    return str("" if value is None else value).replace("|", "\\|").replace("\n", " ")


def render(doc: dict[str, Any]) -> str:
    g = doc["goodput"]
    out = ["# Where did the time go", "", f"**{headline(doc)}**", "", step_line(g), "",
           "| bucket | time | % of wall |", "|---|---:|---:|"]
    for row in bucket_rows(g):
        pct = f"{row['percent']:.2f}" if row["percent"] is not None else "n/a"
        out.append(f"| {row['bucket']} ({_cell(row['label'])}) | {seconds_text(row['seconds'])} | {pct} |")
    nulls = g.get("nulls") or {}
    if nulls:
        out += ["", "Figures the log cannot support:", ""] + [f"- `{k}`: {_cell(v)}" for k, v in nulls.items()]
    out += ["", "## Findings", ""]
    for f in doc.get("findings") or []:
        out.append(f"- **{f['status']}** {_cell(f['title'])} (`{f['id']}`): {_cell(f['message'])}")
        out += [f"  - {_cell(x)}" for x in fixes(f)]
    if g.get("notes"):
        out += ["", "## Notes", ""] + [f"- {_cell(n)}" for n in g["notes"]]
    line = gate_line(doc)
    if line:
        out += ["", f"**{line}**"]
    return "\n".join(out) + "\n"
