"""Diag report as Markdown: the headline, the findings with their fixes, the per-chip table."""

from __future__ import annotations

from typing import Any

from tpudoctor.findings import Finding, Status
from tpudoctor.reports import escape
from tpudoctor.reports.diag_words import cell, columns_present, headline
from tpudoctor.reports.markers import MARKERS, scope_words


def render(doc: dict[str, Any], *, verbose: bool = False) -> str:
    lines = [f"# {escape.markdown(headline(doc))}", ""]
    if doc["faults_injected"]:
        lines += [f"Injected: {escape.markdown('; '.join(doc['faults_injected']))}", ""]
    lines += ["## Findings", ""]
    for raw in doc["findings"]:
        f = Finding.from_dict(raw)
        where = scope_words(f.scope)
        lines.append(f"- {escape.markdown(MARKERS[f.status])} **{escape.markdown(f.title)}**: "
                     f"{escape.markdown(f.message)}" + (f" ({escape.markdown(where)})" if where else ""))
        if f.remediation and f.status in (Status.FAIL, Status.WARN, Status.ERROR):
            lines.append(f"  - fix: {escape.markdown(f.remediation.text)}")
            lines += [f"  - {escape.markdown_code(c)}" for c in f.remediation.commands]
    columns = columns_present(doc)
    if doc["chips"] and len(columns) > 1:
        lines += ["", "## Chips", "", "| " + " | ".join(escape.markdown(t) for _, t, _ in columns) + " |",
                  "|" + "---|" * len(columns)]
        for row in doc["chips"]:
            lines.append("| " + " | ".join(escape.markdown_code(cell(row, k, form), in_table=True)
                                           for k, _, form in columns) + " |")
    return "\n".join(lines) + "\n"
