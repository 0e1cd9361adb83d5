"""Markdown check report, for a CI job summary or an issue comment.

Every value from the report goes through ``tpudoctor.reports.escape``'s Markdown rule: a message can
hold neither HTML nor Markdown that would render.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tpudoctor.findings import CheckResult, Report, Status, root_cause
from tpudoctor.reports import evidence_tables
from tpudoctor.reports.escape import markdown as md
from tpudoctor.reports.escape import markdown_code, markdown_fence, markdown_link, markdown_prose
from tpudoctor.reports.markers import MARKERS, root_cause_headline, scope_words, summary_sentence
from tpudoctor.reports.sections import Section


def render(report: Report, *, verbose: bool = False, scope_in_title: bool = True,
           sections: Sequence[Section] = ()) -> str:
    """``scope_in_title=False`` where the messages already say where (a merged pod report)."""
    lines = ["# tpudoctor check", ""]
    for section in sections:
        if shown := section.markdown():
            lines += [shown, ""]
    t = report.target
    target = ", ".join(f"{k} {markdown_code(v)}" for k, v in t.to_dict().items() if v)
    lines.append(f"tpudoctor {md(report.tool_version)} on {markdown_code(report.host)}"
                 + (f"; {target}" if target else ""))
    lines.append("")
    cause = root_cause(report.results)
    if cause is not None:
        where = scope_words(cause.scope) if scope_in_title else ""
        lines += [f"## Root cause: {root_cause_headline(cause, md)}" + (f" ({md(where)})" if where else ""), "",
                  f"**{MARKERS[cause.status]} {md(cause.message)}**", ""]
        lines += _fix(cause)
        if cause.evidence:
            shown = {k: v for k, v in cause.to_dict()["evidence"].items() if k != "traceback"}
            lines += ["<details><summary>evidence</summary>", "",
                      *markdown_fence(json.dumps(shown, indent=2).splitlines(), "json"), "", "</details>", ""]
            for key, columns, rows in evidence_tables.tables(cause.evidence):
                lines += [f"**{md(key)}**", "", "| " + " | ".join(md(c) for c in columns) + " |",
                          "|" + "---|" * len(columns)]
                lines += ["| " + " | ".join(md(v) for v in row) + " |" for row in rows]
                lines.append("")
    else:
        lines += [f"**{md(summary_sentence(report))}**", ""]
    scoped = any(not r.scope.is_whole for r in report.results)  # a Scope column only where it says something
    if scoped:
        lines += ["## Results", "", "| | step | check | scope | result |", "|---|---|---|---|---|"]
    else:
        lines += ["## Results", "", "| | step | check | result |", "|---|---|---|---|"]
    for r in report.ordered_results():
        where = f" {md(scope_words(r.scope).removeprefix('on ')) or 'all'} |" if scoped else ""
        lines.append(f"| {MARKERS[r.status]} | {int(r.step)} | {md(r.id)} {md(r.title)} |{where} {md(r.message)} |")
    lines.append("")
    others = [r for r in report.ordered_results()
              if r is not cause and r.status in (Status.FAIL, Status.WARN, Status.ERROR) and (r.remediation or verbose)]
    if others:
        lines += ["## Other findings", ""]
        for r in others:
            where = scope_words(r.scope) if scope_in_title else ""
            lines += [f"### {MARKERS[r.status]} {md(r.id)} {md(r.title)}" + (f" ({md(where)})" if where else ""), "",
                      md(r.message), ""]
            lines += _fix(r)
    lines.append(md(summary_sentence(report)))
    return "\n".join(lines) + "\n"


def _fix(result: CheckResult) -> list[str]:
    fix = result.remediation
    if fix is None:
        return []
    out = []
    if fix.text:
        out += [f"**Fix:** {markdown_prose(fix.text)}", ""]
    if fix.commands:
        out += [*markdown_fence(list(fix.commands), "sh"), ""]
    if fix.docs_url:
        out += [f"Docs: {markdown_link(fix.docs_url)}", ""]
    return out
