"""Diag report as text: flutter doctor's boxes, one line per finding, then the per-chip table."""

from __future__ import annotations

from typing import Any

from tpudoctor.findings import Finding, Status
from tpudoctor.reports import escape
from tpudoctor.reports.diag_words import cell, columns_present, headline
from tpudoctor.reports.markers import MARKERS, scope_words


def render(doc: dict[str, Any], *, verbose: bool = False) -> str:
    lines = [escape.plain(headline(doc))]
    if doc["faults_injected"]:
        lines.append("  injected: " + escape.plain("; ".join(doc["faults_injected"])))
    lines.append("")
    for raw in doc["findings"]:
        finding = Finding.from_dict(raw)
        where = scope_words(finding.scope)
        lines.append(f"{MARKERS[finding.status]} {escape.plain(finding.title)}: {escape.plain(finding.message)}"
                     + (f" [{escape.plain(where)}]" if where and finding.status is not Status.PASS else ""))
        if finding.remediation and finding.status in (Status.FAIL, Status.WARN, Status.ERROR):
            lines.append(f"    fix: {escape.plain(finding.remediation.text)}")
            lines += [f"      $ {escape.plain(c)}" for c in finding.remediation.commands]
        if verbose and finding.evidence:
            lines += [f"    {escape.plain(k)}: {escape.plain(v)}" for k, v in finding.evidence.items()]
    columns = columns_present(doc)
    if doc["chips"] and len(columns) > 1:
        table = [[title for _, title, _ in columns]]
        table += [[escape.plain(cell(row, key, form)) for key, _, form in columns] for row in doc["chips"]]
        widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
        lines.append("")
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    if doc.get("allreduce"):
        lines.append("")
        lines.append("all-reduce bus bandwidth: " + ", ".join(
            f"axis {escape.plain(a)} (x{doc['allreduce']['axes'][a]}) {v:.3g} GB/s"
            for a, v in doc["allreduce"]["bus_gbps_median"].items()))
    if doc.get("dcn"):
        dcn = doc["dcn"]
        lines.append(f"all-reduce across {dcn['groups']} {escape.plain(dcn['across'])} (DCN): "
                     f"{dcn['bus_gbps_median']:.3g} GB/s bus bandwidth")
    return "\n".join(lines) + "\n"
