"""Status markers shared by the text, markdown and HTML renderers (flutter doctor's boxes), and scope in words."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tpudoctor.findings import Scope, Status, root_cause

if TYPE_CHECKING:
    from tpudoctor.findings import Finding, Report

MARKERS = {
    Status.PASS: "[✓]",
    Status.WARN: "[!]",
    Status.FAIL: "[✗]",
    Status.SKIP: "[-]",
    Status.ERROR: "[☠]",
}

STYLES = {
    Status.PASS: "green",
    Status.WARN: "yellow",
    Status.FAIL: "bold red",
    Status.SKIP: "dim",
    Status.ERROR: "magenta",
}

WORDS = {
    Status.PASS: "ok",
    Status.WARN: "warning",
    Status.FAIL: "failed",
    Status.SKIP: "skipped",
    Status.ERROR: "could not run",
}


def scope_words(scope: Scope) -> str:
    """``on workers 3, 7`` / ``on worker 0; hosts t1v-n-0`` ; empty for the whole node or job."""
    parts = []
    for singular, plural, values in (("worker", "workers", scope.workers), ("host", "hosts", scope.hosts),
                                     ("chip", "chips", scope.chips)):
        if values:
            parts.append(f"{singular if len(values) == 1 else plural} {', '.join(values)}")
    return f"on {'; '.join(parts)}" if parts else ""


def summary_sentence(report: Report) -> str:
    """The one sentence every format ends with (plain text; each renderer escapes it for its format):
    ``tpudoctor found 2 issue(s) (1 warning, 1 failed, 3 ok). Root cause: NODE-001.`` or
    ``No issues found (3 ok).`` A warning is an issue in every format."""
    counts = report.summary.counts
    problems = counts["FAIL"] + counts["ERROR"] + counts["WARN"]
    tally = ", ".join(f"{counts[s.value]} {WORDS[s]}" for s in Status if counts[s.value]) or "no checks ran"
    if not problems:
        return f"No issues found ({tally})."
    cause = root_cause(report.results)
    where = scope_words(cause.scope) if cause is not None else ""
    named = f" Root cause: {cause.id}{f' {where}' if where else ''}." if cause is not None else ""
    return f"tpudoctor found {problems} issue(s) ({tally}).{named}"


def root_cause_headline(cause: Finding, escape: Callable[[str], str] = str) -> str:
    """``[✗] LOGS-001 Job log shows no known TPU failure: failed``: titles say what passing means, so
    the headline says what happened (only a FAIL or an ERROR is ever a root cause). ``escape`` is the
    format's rule for the values from the report."""
    return f"{MARKERS[cause.status]} {escape(cause.id)} {escape(cause.title)}: {WORDS[cause.status]}"
