"""Terminal profile report: what the capture holds, host by host, plane by plane.

Not a stable interface: scripts should read ``--format json``.
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from tpudoctor.profile.summary import CaptureSummary, HostSummary
from tpudoctor.reports.escape import text as escape


def render_document(document: dict, *, color: bool = False, width: int = 110) -> str:
    """The report from its prepared document (``tpudoctor.documents.profile_document``)."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=width,
                      highlight=False, emoji=False, soft_wrap=False)
    summary = CaptureSummary.from_dict(document["summary"])
    run = f" · run {summary.run}" if summary.run else ""
    console.print(f"[bold]Profile[/bold] {escape(summary.source)}{escape(run)}")
    kinds = ", ".join(summary.device_kinds) or "none"
    console.print(f"{summary.n_hosts} host(s) · {summary.n_events:,} events · device: {escape(kinds)}")
    if len(summary.runs_available) > 1:
        console.print(f"[dim]other runs: {escape(', '.join(r for r in summary.runs_available if r != summary.run))} "
                      "(choose with --run)[/dim]")
    from tpudoctor.reports.profile_diagnosis_text import diagnosis_lines

    for line in diagnosis_lines(document):
        console.print(escape(line))
    console.print("")
    for note in summary.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    for hostname, message in summary.failed_hosts.items():
        console.print(f"[red]host {escape(hostname)} not loaded:[/red] {escape(message)}")
    if len(summary.hosts) > MAX_DETAILED_HOSTS:
        console.print()
        _host_table(console, summary.hosts)
        console.print(f"[dim]planes and lines of the first of {len(summary.hosts)} hosts "
                      "(all hosts: --format json):[/dim]")
    for host in summary.hosts[:MAX_DETAILED_HOSTS if len(summary.hosts) <= MAX_DETAILED_HOSTS else 1]:
        console.print()
        _host(console, host)
    return buffer.getvalue()


MAX_DETAILED_HOSTS = 4


def _host_table(console: Console, hosts: list[HostSummary]) -> None:
    table = Table(show_edge=False, pad_edge=False, box=None)
    for name, justify in (("host", "left"), ("device kind", "left"), ("device planes", "right"),
                          ("events", "right"), ("span", "right")):
        table.add_column(name, justify=justify)
    for host in hosts:
        table.add_row(escape(host.hostname), escape(host.device_kind), str(host.n_device_planes),
                      f"{host.n_events:,}", format_ps(host.span_ps))
    console.print(table)


def _host(console: Console, host: HostSummary) -> None:
    duration = f" · profile window {format_ps(host.profile_duration_ns * 1000)}" if host.profile_duration_ns else ""
    console.print(
        f"[bold]Host {escape(host.hostname)}[/bold] · {escape(host.device_kind)} · "
        f"{host.n_planes} planes, {host.n_lines} lines, {host.n_events:,} events · "
        f"span {format_ps(host.span_ps)}{duration} · {host.file_size_bytes / 1e6:.1f} MB"
    )
    table = Table(show_edge=False, pad_edge=False, box=None)
    table.add_column("plane / line")
    table.add_column("device kind")
    table.add_column("lines", justify="right")
    table.add_column("events", justify="right")
    table.add_column("span", justify="right")
    for plane in host.planes:
        table.add_row(f"[bold]{escape(plane.plane_name)}[/bold]", escape(plane.device_kind or "-"),
                      str(plane.n_lines), f"{plane.n_events:,}", format_ps(plane.span_ps))
        shown = plane.lines if len(plane.lines) <= 12 else sorted(plane.lines, key=lambda line: -line.n_events)[:10]
        for line in shown:
            table.add_row(f"  {escape(line.line_name)}", "", "", f"{line.n_events:,}", format_ps(line.span_ps))
        if len(shown) < len(plane.lines):
            rest = [line for line in plane.lines if line not in shown]
            table.add_row(f"  [dim]... {len(rest)} more lines[/dim]", "", "",
                          f"[dim]{sum(line.n_events for line in rest):,}[/dim]", "")
    console.print(table)


def format_ps(value_ps: int | float | None) -> str:
    if not value_ps:
        return "-"
    for unit, scale in (("s", 1e12), ("ms", 1e9), ("us", 1e6), ("ns", 1e3)):
        if value_ps >= scale:
            return f"{value_ps / scale:.3g} {unit}" if value_ps / scale < 100 else f"{value_ps / scale:,.0f} {unit}"
    return f"{value_ps} ps"
