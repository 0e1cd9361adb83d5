"""A view as Markdown (a pull request, an incident note, a CI job summary): ``#`` the title, ``##`` each section,
findings as a list with their fixes under them, tables as GFM tables, preformatted lines fenced."""

from __future__ import annotations

from tpudoctor.reports.escape import markdown as md
from tpudoctor.reports.escape import markdown_code, markdown_fence, markdown_link, markdown_prose
from tpudoctor.reports.view import Section, Shown, Table, View, shown


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
        for item in shown(section):
            lines += _finding(item, verbose or section.evidence)
        lines.append("")
    if section.table is not None:
        lines += [*table_lines(section.table), ""]
    if section.code:
        lines += [*markdown_fence(list(section.code)), ""]
    if section.commands:
        lines += [*markdown_fence(list(section.commands), "sh"), ""]
    return lines


def _finding(shown: Shown, verbose: bool) -> list[str]:
    lines = [f"- {md(shown.line)}"]
    if shown.brief:
        return [*lines, "  - (see above)"]
    lines += [f"  - {md(shown.confidence)}"] if shown.confidence else []
    lines += [f"  - fix: {markdown_prose(line)}" for line in shown.fixes]
    lines += [f"  - {markdown_code(c)}" for c in shown.commands]
    lines += [f"  - docs: {markdown_link(shown.docs)}"] if shown.docs else []
    return lines + ([f"  - {md(line)}" for line in shown.evidence] if verbose else [])


def table_lines(table: Table) -> list[str]:
    rule = "|" + "".join("---:|" if i < len(table.align) and table.align[i] == "r" else "---|"
                         for i in range(len(table.columns)))
    return ["| " + " | ".join(md(c) for c in table.columns) + " |", rule,
            *("| " + " | ".join(md(c) for c in row) + " |" for row in table.rows)]
