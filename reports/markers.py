"""Status markers shared by the text, markdown and HTML renderers (flutter doctor's boxes)."""

from __future__ import annotations

from tpudoctor.findings import Status

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
