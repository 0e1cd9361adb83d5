"""Status markers shared by the text, markdown and HTML renderers (flutter doctor's boxes), and scope in words."""

from __future__ import annotations

from tpudoctor.findings import Scope, Status

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
