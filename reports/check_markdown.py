"""Markdown check report, for a CI job summary or an issue comment."""

from __future__ import annotations

import json

from tpudoctor.findings import CheckResult, Report, Status, root_cause
from tpudoctor.reports import evidence_tables
from tpudoctor.reports.markers import MARKERS, WORDS, scope_words


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(report: Report, *, verbose: bool = False, scope_in_title: bool = True) -> str:
    """``scope_in_title=False`` where the messages already say where (a merged pod report)."""
    lines = ["# tpudoctor check", ""]
    t = report.target
    target = ", ".join(f"{k} `{v}`" for k, v in t.to_dict().items() if v)
    lines.append(f"tpudoctor {report.tool_version} on `{report.host}`" + (f"; {target}" if target else ""))
    lines.append("")
    cause = root_cause(report.results)
    if cause is not None:
        where = scope_words(cause.scope) if scope_in_title else ""
        lines += [f"## Root cause: {cause.id} {cause.title}" + (f" ({where})" if where else ""), "",
                  f"**{MARKERS[cause.status]} {cause.message}**", ""]
        lines += _fix(cause)
        if cause.evidence:
            lines += ["<details><summary>evidence</summary>", "", "```json",
                      json.dumps({k: v for k, v in cause.to_dict()["evidence"].items() if k != "traceback"}, indent=2),
                      "```", "", "</details>", ""]
            for key, columns, rows in evidence_tables.tables(cause.evidence):
                lines += [f"**{key}**", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
                lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
                lines.append("")
    else:
        lines += ["**No issues found.**", ""]
    scoped = any(not r.scope.is_whole for r in report.results)  # a Scope column only where it says something
    if scoped:
        lines += ["## Results", "", "| | step | check | scope | result |", "|---|---|---|---|---|"]
    else:
        lines += ["## Results", "", "| | step | check | result |", "|---|---|---|---|"]
    for r in report.ordered_results():
        where = f" {_cell(scope_words(r.scope).removeprefix('on ')) or 'all'} |" if scoped else ""
        lines.append(f"| {MARKERS[r.status]} | {int(r.step)} | {r.id} {_cell(r.title)} |{where} {_cell(r.message)} |")
    lines.append("")
    others = [r for r in report.ordered_results()
              if r is not cause and r.status in (Status.FAIL, Status.WARN, Status.ERROR) and (r.remediation or verbose)]
    if others:
        lines += ["## Other findings", ""]
        for r in others:
            where = scope_words(r.scope) if scope_in_title else ""
            lines += [f"### {MARKERS[r.status]} {r.id} {r.title}" + (f" ({where})" if where else ""), "", r.message, ""]
            lines += _fix(r)
    counts = report.summary.counts
    lines.append(", ".join(f"{counts[s.value]} {WORDS[s]}" for s in Status if counts[s.value]))
    return "\n".join(lines) + "\n"


def _fix(result: CheckResult) -> list[str]:
    fix = result.remediation
    if fix is None:
        return []
    out = []
    if fix.text:
        out += [f"**Fix:** {fix.text}", ""]
    if fix.commands:
        out += ["```sh", *fix.commands, "```", ""]
    if fix.docs_url:
        out += [f"Docs: <{fix.docs_url}>", ""]
    return out
