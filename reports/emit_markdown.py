"""A view as Markdown (a pull request, an incident note, a CI job summary): ``#`` the title, ``##`` each section,
findings as a list with their fixes under them, tables as GFM tables, preformatted lines fenced."""

from __future__ import annotations

from tpudoctor.findings import Finding
from tpudoctor.reports.escape import markdown as md
from tpudoctor.reports.escape import markdown_code, markdown_fence, markdown_link, markdown_prose
from tpudoctor.reports.view import (
    Section,
    Table,
    View,
    evidence_lines,
    finding_line,
    fix_lines,
    shows_fix,
)


def emit(view: View, *, verbose: bool = False) -> str:
    lines = [f"# {md(view.title)}", ""]
    for note in view.notes:
        lines += [md(note), ""]
    for section in view.sections:
        if section.verbose_only and not verbose:
            continue
        lines += _section(section, verbose)
    return "\n".join(lines).rstrip("\n") + "\n"


def _section(section: Section, verbose: bool) -> list[str]:
    lines = [f"{'#' * section.level} {md(section.title)}", ""] if section.title else []
    for note in section.notes:
        lines += [md(note), ""]
    if section.findings:
        for finding in section.findings:
            lines += _finding(finding, verbose or section.evidence, brief=finding.id in section.shown_above,
                              scope=not section.scope_said)
        lines.append("")
    if section.table is not None:
        lines += [*table_lines(section.table), ""]
    if section.code:
        lines += [*markdown_fence(list(section.code)), ""]
    if section.commands:
        lines += [*markdown_fence(list(section.commands), "sh"), ""]
    return lines


def _finding(finding: Finding, verbose: bool, *, brief: bool = False, scope: bool = True) -> list[str]:
    lines = [f"- {md(finding_line(finding, scope=scope))}"]
    if brief:
        return [*lines, "  - (see above)"]
    fix = finding.remediation
    if fix is not None and shows_fix(finding):
        lines += [f"  - fix: {markdown_prose(line)}" for line in fix_lines(finding)]
        lines += [f"  - {markdown_code(c)}" for c in fix.commands]
        if fix.docs_url:
            lines.append(f"  - docs: {markdown_link(fix.docs_url)}")
    if verbose:
        lines += [f"  - {md(line)}" for line in evidence_lines(finding)]
    return lines


def table_lines(table: Table) -> list[str]:
    rule = "|" + "".join("---:|" if i < len(table.align) and table.align[i] == "r" else "---|"
                         for i in range(len(table.columns)))
    return ["| " + " | ".join(md(c) for c in table.columns) + " |", rule,
            *("| " + " | ".join(md(c) for c in row) + " |" for row in table.rows)]
