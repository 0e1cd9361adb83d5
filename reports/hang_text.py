"""Terminal hang report: the verdict and the root cause first (who, which frame, who waits, since when),
the decision with its commands, then the processes grouped by where they stand, as ``py-spy dump`` prints
stacks ("63 workers: ..." once, "worker 5: ..." apart), then the findings.

Not a stable interface: scripts should read ``--format json``.
"""

from __future__ import annotations

import io
import json

from rich.console import Console

from tpudoctor.findings import Status
from tpudoctor.hang.report import HangReport
from tpudoctor.reports.escape import text as escape
from tpudoctor.reports.hang_words import (
    VERDICT_WORDS,
    category_words,
    first_member_state,
    frame_lines,
    group_progress,
    members_words,
    summary_line,
)
from tpudoctor.reports.markers import MARKERS, STYLES, scope_words

VERDICT_STATUS = {"hung": Status.FAIL, "progressing": Status.PASS, "unknown": Status.WARN, "no_process": Status.FAIL}


def render(report: HangReport, *, verbose: bool = False, color: bool = False, width: int = 100) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=width, highlight=False,
                      soft_wrap=True)
    t = report.target
    head = [f"tpudoctor hang {report.tool_version}"] + [f"{k} {v}" for k, v in (
        ("project", t.project), ("zone", t.zone), ("tpu", t.tpu), ("worker", t.worker)) if v]
    console.print(escape(" · ".join(head)))
    console.print(escape(summary_line(report)))
    console.print()
    status = VERDICT_STATUS[report.verdict]
    style = STYLES[status]
    cause = report.root_cause
    headline = cause.headline if cause is not None and report.verdict == "hung" else report.verdict_why
    rate = f" at {report.steps_per_s:.2f} steps/s" if report.verdict == "progressing" and report.steps_per_s else ""
    console.print(f"[{style}]{escape(MARKERS[status])} {VERDICT_WORDS[report.verdict]}{escape(rate)}[/{style}] "
                  f"(confidence {report.confidence}): {escape(headline)}")
    if cause is not None and report.verdict == "hung":
        if cause.stalled_since is not None:
            ago = max((report.started_at - cause.stalled_since).total_seconds(), 0)
            console.print(f"    no step since {cause.stalled_since.astimezone().strftime('%Y-%m-%d %H:%M:%S')} "
                          f"({ago:.0f}s before this run)")
        if cause.detail and cause.detail not in headline:
            console.print(f"    [dim]{escape(cause.detail)}[/dim]")
        console.print(f"    [dim]why hung: {escape(report.verdict_why)}[/dim]")
    elif cause is not None:
        console.print(f"    if it is stuck: {escape(cause.headline)}")
    decision = report.decision
    if decision is not None:
        console.print()
        console.print(f"[bold]Decision: {escape(decision.action)}[/bold] (confidence {decision.confidence}): "
                      f"{escape(decision.why)}")
        console.print(f"    {escape(decision.text)}")
        for command in decision.commands:
            console.print(f"      [cyan]$ {escape(command)}[/cyan]")
    _groups(console, report, verbose)
    _digests(console, report)
    console.print()
    console.print("[bold]Findings[/bold]")
    for finding in report.findings:
        marker = MARKERS[finding.status]
        where = scope_words(finding.scope)
        where = f" ({escape(where)})" if where and finding.status is not Status.PASS else ""
        fstyle = STYLES[finding.status]
        console.print(f"  [{fstyle}]{escape(marker)}[/{fstyle}] {escape(finding.id)} {escape(finding.title)}{where}: "
                      f"{escape(finding.message)}")
        if finding.status in (Status.FAIL, Status.ERROR, Status.WARN) and finding.remediation and finding.id != "HANG-001":
            if finding.remediation.text:
                console.print(f"      [bold]fix:[/bold] {escape(finding.remediation.text)}")
            for command in finding.remediation.commands:
                console.print(f"        [cyan]$ {escape(command)}[/cyan]")
        if verbose and finding.evidence:
            for key, value in finding.evidence.items():
                shown = value if isinstance(value, str) else json.dumps(value, default=str)
                console.print(f"      [dim]{escape(str(key))}: {escape(shown[:300])}[/dim]")
    return buffer.getvalue()


def _groups(console: Console, report: HangReport, verbose: bool) -> None:
    if not report.groups:
        return
    console.print()
    console.print("[bold]Where the processes stand[/bold] (training thread, innermost frame first; like py-spy dump)")
    captures = {(c.worker, c.pid): c for c in report.captures}
    for group in report.groups:
        state = first_member_state(report, group)
        mark = "  <- the odd one out" if group.odd_one_out else ""
        console.print()
        progress = group_progress(report, group)
        console.print(f"  [bold]{escape(members_words(group.members))}[/bold]: {escape(category_words(group.category))}"
                      f"{escape(', ' + progress if progress else '')}[yellow]{escape(mark)}[/yellow]")
        if state is not None and state.detail:
            console.print(f"    [dim]{escape(state.detail)}[/dim]")
        if state is not None and state.progress_why:
            console.print(f"    [dim]{escape(state.progress_why)}[/dim]")
        if not group.stack:
            continue
        capture = captures.get(group.members[0])
        last = capture.samples[-1] if capture and capture.samples else None
        thread = next((t for t in last.threads if t.name == group.thread), None) if last else None
        status = ("active" if thread.active else "idle") if thread else "?"
        tid = f"{thread.tid} " if thread else ""
        console.print(f"    Thread {tid}({status}): {escape(repr(group.thread))}")
        for line in frame_lines(group.stack):
            console.print(f"      {escape(line)}")
        if state is not None and state.native and verbose:
            console.print("      [dim]native frames under it:[/dim]")
            for line in frame_lines(state.native, code=False, limit=8):
                console.print(f"        [dim]{escape(line)}[/dim]")
        if last is not None and (group.odd_one_out or verbose):
            for other in last.threads:
                if other.name == group.thread or not other.frames:
                    continue
                holding = any(f.holding for f in other.frames)
                if not (verbose or holding or other.active):
                    continue
                console.print(f"    Thread {other.tid} ({'active' if other.active else 'idle'}): {escape(repr(other.name))}")
                for line in frame_lines(other.frames, limit=6):
                    console.print(f"      {escape(line)}")
                for frame in other.frames:
                    for held in frame.holding:
                        console.print(f"      [yellow]holds: {escape(held)}[/yellow]")


def _digests(console: Console, report: HangReport) -> None:
    full = [d for d in report.digests if d.kind != "timed_out"]
    if not full and not report.digests:
        return
    console.print()
    console.print("[bold]Megascale[/bold]")
    for digest in report.digests[-5:]:
        hosts = f"; culprits {', '.join(digest.culprit_hosts)}" if digest.culprit_hosts else ""
        pcs = f"; program counters {digest.program_counters}" if digest.program_counters else ""
        console.print(f"  {escape(digest.kind)}: {escape(digest.cause or digest.headline[:160])}{escape(hosts)}"
                      f"{escape(pcs)} [dim]({escape(digest.source)}:{digest.line_no})[/dim]")
