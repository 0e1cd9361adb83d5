"""Renderers: they format a finished report and do nothing else (no I/O, no analysis)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tpudoctor.findings import Gate, Report
    from tpudoctor.reports.sections import Section


def render_check_report(report: Report, fmt: str, *, verbose: bool = False, color: bool = False,
                        sections: Sequence[Section] = (), scope_in_title: bool = True, gate: Gate | None = None) -> str:
    """``sections``: what the report shows beside its findings, in every format (``reports.sections``);
    ``scope_in_title=False`` where the messages already say where (a merged pod report); ``gate``: the run's
    (``tpudoctor.findings.Gate``), which decides the JUnit failures as it decides the exit status."""
    if fmt == "json":
        from tpudoctor.reports.check_json import render
        return render(report, sections=sections)
    if fmt == "markdown":
        from tpudoctor.reports.check_markdown import render
        return render(report, verbose=verbose, scope_in_title=scope_in_title, sections=sections)
    if fmt == "junit":
        from tpudoctor.reports.check_junit import render
        return render(report, sections=sections, **({"gate": gate} if gate is not None else {}))
    if fmt == "html":
        from tpudoctor.reports.check_html import render
        return render(report, scope_in_title=scope_in_title, sections=sections)
    from tpudoctor.reports.check_text import render
    return render(report, verbose=verbose, color=color, scope_in_title=scope_in_title, sections=sections)
