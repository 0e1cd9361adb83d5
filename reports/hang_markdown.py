"""Markdown hang report, for an incident note or a CI job summary."""

from __future__ import annotations

from tpudoctor.hang.report import HangReport
from tpudoctor.reports.escape import markdown as md
from tpudoctor.reports.escape import markdown_code, markdown_fence, markdown_prose
from tpudoctor.reports.hang_words import (
    VERDICT_WORDS,
    category_words,
    first_member_state,
    frame_lines,
    group_progress,
    members_words,
    summary_line,
)
from tpudoctor.reports.markers import MARKERS, scope_words


def render(report: HangReport, *, verbose: bool = False) -> str:
    lines = ["# tpudoctor hang", "", f"tpudoctor {md(report.tool_version)}: {md(summary_line(report))}", ""]
    cause = report.root_cause
    headline = cause.headline if cause is not None and report.verdict == "hung" else report.verdict_why
    lines += [f"## {VERDICT_WORDS[report.verdict]} (confidence {md(report.confidence)})", "", f"**{md(headline)}**", ""]
    if cause is not None and report.verdict == "hung":
        if cause.stalled_since is not None:
            lines += [f"No step since {cause.stalled_since.isoformat()}.", ""]
        lines += [f"Why hung: {md(report.verdict_why)}", ""]
    if report.decision is not None:
        d = report.decision
        lines += [f"## Decision: {md(d.action)} (confidence {md(d.confidence)})", "", md(d.why) + ".", "",
                  markdown_prose(d.text), ""]
        if d.commands:
            lines += [*markdown_fence(list(d.commands), "sh"), ""]
    if report.groups:
        lines += ["## Where the processes stand", "", "| | processes | where | progress |", "|---|---|---|---|"]
        for group in report.groups:
            state = first_member_state(report, group)
            where = f"{state.frame.function} ({state.frame.where})" if state and state.frame else ""
            lines.append(f"| {'**odd one out**' if group.odd_one_out else ''} | {md(members_words(group.members))} | "
                         f"{md(category_words(group.category))}: {markdown_code(where, in_table=True)} | "
                         f"{md(group_progress(report, group))} |")
        lines.append("")
        for group in report.groups:
            if not group.stack or not (group.odd_one_out or verbose or len(report.groups) == 1):
                continue
            lines += [f"{md(members_words(group.members))}, thread {md(group.thread)}:", "",
                      "<details><summary>stack</summary>", "", *markdown_fence(frame_lines(group.stack)), "",
                      "</details>", ""]
    lines += ["## Findings", "", "| | id | finding | scope | result |", "|---|---|---|---|---|"]
    for f in report.findings:
        where = scope_words(f.scope).removeprefix("on ") or "all"
        lines.append(f"| {MARKERS[f.status]} | {md(f.id)} | {md(f.title)} | {md(where)} | {md(f.message)} |")
    lines.append("")
    for f in report.findings:
        if f.id == "HANG-001" or f.remediation is None or f.status.value == "PASS":
            continue
        lines += [f"### {MARKERS[f.status]} {md(f.id)} {md(f.title)}", "", markdown_prose(f.remediation.text), ""]
        if f.remediation.commands:
            lines += [*markdown_fence(list(f.remediation.commands), "sh"), ""]
    return "\n".join(lines) + "\n"
