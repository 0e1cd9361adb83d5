"""Diag report as one HTML page: the headline, the findings with their fixes, the per-chip table (slow cells
marked), and a bar per chip of its matmul rate against its peers."""

from __future__ import annotations

from typing import Any

from tpudoctor.findings import Finding, Status
from tpudoctor.reports import escape
from tpudoctor.reports.diag_words import cell, columns_present, headline
from tpudoctor.reports.markers import MARKERS

_STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}td:first-child{text-align:left}"
          ".FAIL,.ERROR{color:#b00}.WARN{color:#a60}.PASS{color:#070}.bar{background:#69c;height:.8em}"
          ".slow{background:#fdd}code{background:#f4f4f4;padding:0 .2em}")


def _chips(doc: dict[str, Any]) -> list[str]:
    columns = columns_present(doc)
    if not doc["chips"] or len(columns) < 2:
        return []
    out = ["<h2>Chips</h2><table><tr>" + "".join(f"<th>{escape.html(t)}</th>" for _, t, _ in columns)
           + "<th>matmul rate</th></tr>"]
    best = max((r.get("matmul_tflops_p10") or 0 for r in doc["chips"]), default=0) or 1
    for row in doc["chips"]:
        slow = (row.get("matmul_slowness") or 1) - 1 > (row.get("matmul_margin") or 1)
        cells = "".join(f"<td>{escape.html(cell(row, k, form))}</td>" for k, _, form in columns)
        width = 100 * (row.get("matmul_tflops_p10") or 0) / best
        out.append(f"<tr class=\"{'slow' if slow else ''}\">{cells}"
                   f"<td><div class=\"bar\" style=\"width:{width:.0f}px\"></div></td></tr>")
    return out + ["</table>"]


def render(doc: dict[str, Any]) -> str:
    parts = ["<!doctype html><html><head><meta charset=\"utf-8\"><title>tpudoctor diag</title>",
             f"<style>{_STYLE}</style></head><body>", f"<h1>{escape.html(headline(doc))}</h1>"]
    if doc["faults_injected"]:
        parts.append(f"<p>Injected: {escape.html('; '.join(doc['faults_injected']))}</p>")
    parts.append("<h2>Findings</h2><ul>")
    for raw in doc["findings"]:
        f = Finding.from_dict(raw)
        parts.append(f"<li class=\"{f.status.value}\">{escape.html(MARKERS[f.status])} <b>{escape.html(f.title)}</b>: "
                     f"{escape.html(f.message)}")
        if f.remediation and f.status in (Status.FAIL, Status.WARN, Status.ERROR):
            parts.append(f"<br>fix: {escape.html(f.remediation.text)}")
            parts += [f"<br><code>{escape.html(c)}</code>" for c in f.remediation.commands]
        parts.append("</li>")
    parts.append("</ul>")
    parts += _chips(doc)
    return "".join(parts) + "</body></html>\n"
