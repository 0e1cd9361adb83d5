"""Renderers: they format a finished report and do nothing else (no I/O, no analysis)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tpudoctor.findings import Report


def render_check_report(report: Report, fmt: str, *, verbose: bool = False, color: bool = False) -> str:
    if fmt == "json":
        from tpudoctor.reports.check_json import render
        return render(report)
    if fmt == "markdown":
        from tpudoctor.reports.check_markdown import render
        return render(report, verbose=verbose)
    if fmt == "junit":
        from tpudoctor.reports.check_junit import render
        return render(report)
    if fmt == "html":
        from tpudoctor.reports.check_html import render
        return render(report)
    from tpudoctor.reports.check_text import render
    return render(report, verbose=verbose, color=color)
