"""Terminal check report: root cause first, one line per check, fixes set apart.

Not a stable interface: scripts should read ``--format json``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence

from rich.console import Console

from tpudoctor.findings import CheckResult, Report, Status, Step, root_cause
from tpudoctor.reports import evidence_tables
from tpudoctor.reports.escape import text as escape
from tpudoctor.reports.markers import MARKERS, STYLES, scope_words, summary_sentence
from tpudoctor.reports.sections import Section


def render(report: Report, *, verbose: bool = False, color: bool = False, width: int = 100,
           scope_in_title: bool = True, sections: Sequence[Section] = ()) -> str:
    """``scope_in_title=False`` where the messages already say where (a merged pod report)."""
    buffer = io.StringIO()
    for section in sections:
        if shown := section.text():
            buffer.write(f"{shown}\n")
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=width, highlight=False,
                      emoji=False, soft_wrap=True)  # never break a command someone will copy
    _header(console, report)
    cause = root_cause(report.results)
    if cause is not None:
        console.print()
        console.print(f"[bold]Root cause[/bold] (step {int(cause.step)}, {escape(cause.step.label)}):")
        _result_line(console, cause, indent="  ", scope_in_title=scope_in_title)
        _details(console, cause, indent="      ", evidence=True)

    current: Step | None = None
    ordered = report.ordered_results()
    for result in ordered:
        if result.step != current:
            current = result.step
            console.print()
            console.print(f"[bold]{int(current)}. {escape(current.label)}[/bold]")
            in_step = [r for r in ordered if r.step == current]
            if not verbose and all(r.status is Status.SKIP for r in in_step):
                _skipped_step_line(console, in_step)
        if not verbose and all(r.status is Status.SKIP for r in ordered if r.step == current):
            continue
        _result_line(console, result, indent="  ", scope_in_title=scope_in_title)
        if result is cause:
            console.print("      [dim](root cause, see above)[/dim]")
            continue
        if result.status in (Status.FAIL, Status.WARN, Status.ERROR):
            _details(console, result, indent="      ", evidence=verbose)
        elif verbose and result.evidence:
            _evidence(console, result, "      ")

    console.print()
    console.print(_summary_line(report))
    return buffer.getvalue()


def _header(console: Console, report: Report) -> None:
    t = report.target
    parts = [f"tpudoctor {report.tool_version}"]
    for label, value in (("project", t.project), ("zone", t.zone), ("tpu", t.tpu), ("worker", t.worker)):
        if value:
            parts.append(f"{label} {value}")
    parts.append(f"host {report.host}")
    console.print(escape(" · ".join(parts)))


def _skipped_step_line(console: Console, results: list[CheckResult]) -> None:
    """A step that could not apply at all is one line, with the reasons that started the chain."""
    reasons: list[str] = []
    for r in results:
        reason = r.evidence.get("root_skip_reason") or r.skip_reason or r.message
        if reason not in reasons:
            reasons.append(reason)
    style = STYLES[Status.SKIP]
    console.print(f"  [{style}]{escape(MARKERS[Status.SKIP])} {len(results)} check(s) skipped[/{style}]: "
                  f"{escape(reasons[0])}")
    for reason in reasons[1:3]:
        console.print(f"      [{style}]also: {escape(reason)}[/{style}]")


def _result_line(console: Console, result: CheckResult, *, indent: str, scope_in_title: bool = True) -> None:
    marker = MARKERS[result.status]
    style = STYLES[result.status]
    message = result.message
    if result.status is Status.SKIP and "blocked_by" in result.evidence:
        message = f"blocked by {result.evidence['blocked_by']}"  # the blocker's own line says why
    where = scope_words(result.scope) if scope_in_title else ""
    where = f" ({escape(where)})" if where else ""
    console.print(
        f"{indent}[{style}]{escape(marker)}[/{style}] {escape(result.id)} {escape(result.title)}{where}: "
        f"{escape(message)}"
    )


def _details(console: Console, result: CheckResult, *, indent: str, evidence: bool) -> None:
    if evidence and result.evidence:
        _evidence(console, result, indent)
    fix = result.remediation
    if fix is None:
        return
    if fix.text:
        console.print(f"{indent}[bold]fix:[/bold] {escape(fix.text)}")
    for command in fix.commands:
        console.print(f"{indent}  [cyan]$ {escape(command)}[/cyan]")
    if fix.docs_url:
        console.print(f"{indent}[dim]docs: {escape(fix.docs_url)}[/dim]")


def _evidence(console: Console, result: CheckResult, indent: str) -> None:
    listed = {key: (columns, rows) for key, columns, rows in evidence_tables.tables(result.evidence)}
    for key, value in result.evidence.items():
        if key == "traceback":
            continue
        if key in listed:  # one line per record, its fields named
            console.print(f"{indent}[dim]{escape(str(key))}:[/dim]")
            columns, rows = listed[key]
            for row in rows:
                cells = ", ".join(f"{c} {v}" for c, v in zip(columns, row, strict=True) if v)
                console.print(f"{indent}  [dim]- {escape(cells)}[/dim]")
            continue
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        if str(key).endswith("_bytes") and isinstance(value, int) and not isinstance(value, bool):
            shown = f"{value} ({evidence_tables.human_bytes(value)})"
        if len(shown) > 300:
            shown = shown[:297] + "..."
        console.print(f"{indent}[dim]{escape(str(key))}: {escape(shown)}[/dim]")


def _summary_line(report: Report) -> str:
    sentence = escape(summary_sentence(report))
    if not any(report.summary.counts[s.value] for s in (Status.FAIL, Status.ERROR, Status.WARN)):
        return f"[green]• {sentence}[/green]"
    return f"[bold]! {sentence}[/bold]"
