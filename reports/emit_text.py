"""A view as terminal text (rich, so ``--color`` styles the status boxes): the title, then each section under
its heading, findings one line each with their fixes set apart. Lines never wrap (a command is copied whole).

Not a stable interface: scripts should read ``--format json``.
"""

from __future__ import annotations

import io

from rich.console import Console

from tpudoctor.reports.escape import plain
from tpudoctor.reports.escape import text as escape
from tpudoctor.reports.view import MARKERS, STYLES, Section, Shown, Table, View, shown


def emit(view: View, *, verbose: bool = False, color: bool = False, width: int = 100) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=width, highlight=False,
                      emoji=False, soft_wrap=True)
    console.print(escape(view.title))
    for note in view.notes:
        console.print(escape(note))
    for section in view.sections:
        if section.verbose_only and not verbose:
            continue
        console.print()
        _section(console, section, verbose)
    return buffer.getvalue()


def _section(console: Console, section: Section, verbose: bool) -> None:
    indent = "  " * max(section.level - 2, 0)  # a part of the part before sits under it
    if section.title:
        console.print(f"{indent}[bold]{escape(section.title)}[/bold]")
        indent += "  "
    for note in section.notes:
        console.print(f"{indent}{escape(note)}")
    for item in shown(section):
        _finding(console, item, indent, verbose or section.evidence)
    if section.table is not None:
        for line in table_lines(section.table):
            console.print(f"{indent}{escape(line)}")
    for line in section.code:
        console.print(f"{indent}  {escape(line)}")
    for command in section.commands:
        console.print(f"{indent}  [cyan]$ {escape(command)}[/cyan]")


def _finding(console: Console, shown: Shown, indent: str, verbose: bool) -> None:
    style, marker = STYLES[shown.status], MARKERS[shown.status]
    console.print(f"{indent}[{style}]{escape(marker)}[/{style}]{escape(shown.line.removeprefix(marker))}")
    if shown.brief:
        console.print(f"{indent}    [dim](see above)[/dim]")
        return
    if shown.confidence:
        console.print(f"{indent}    {escape(shown.confidence)}")
    for line in shown.fixes:
        console.print(f"{indent}    [bold]fix:[/bold] {escape(line)}")
    for command in shown.commands:
        console.print(f"{indent}      [cyan]$ {escape(command)}[/cyan]")
    if shown.docs:
        console.print(f"{indent}    [dim]docs: {escape(shown.docs)}[/dim]")
    for line in shown.evidence if verbose else ():
        console.print(f"{indent}    [dim]{escape(line)}[/dim]")


def table_lines(table: Table) -> list[str]:
    """Columns padded to their widest cell (right-aligned where ``align`` says ``r``), two spaces apart; the
    cells as plain one-line text, so widths count what is shown."""
    rows = [[plain(c) for c in table.columns], *([plain(c) for c in row] for row in table.rows)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(table.columns))]
    right = [i < len(table.align) and table.align[i] == "r" for i in range(len(widths))]
    return ["  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right, strict=True)).rstrip()
            for row in rows]
