"""Self-contained HTML check report (no external assets)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tpudoctor.findings import Report, Status, root_cause
from tpudoctor.reports import evidence_tables
from tpudoctor.reports.escape import html as e
from tpudoctor.reports.escape import plain
from tpudoctor.reports.markers import MARKERS, root_cause_headline, scope_words, summary_sentence
from tpudoctor.reports.sections import Section

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1f2328;max-width:1100px}
h1{font-size:1.4rem} .PASS{color:#1a7f37}.WARN{color:#9a6700}.FAIL{color:#cf222e}.SKIP{color:#6e7781}.ERROR{color:#8250df}
.cause{border:2px solid #cf222e;border-radius:6px;padding:1rem;margin:1rem 0;background:#fff5f5}
pre{background:#f6f8fa;padding:.6rem;border-radius:4px;overflow-x:auto}
table{border-collapse:collapse;width:100%} td,th{border-bottom:1px solid #d0d7de;padding:.35rem .5rem;text-align:left;vertical-align:top}
"""


def render(report: Report, *, scope_in_title: bool = True, sections: Sequence[Section] = ()) -> str:
    """``scope_in_title=False`` where the messages already say where (a merged pod report)."""
    cause = root_cause(report.results)
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>tpudoctor check</title>",
             f"<style>{_CSS}</style></head><body><h1>tpudoctor check</h1>",
             *(section.html() for section in sections),
             f"<p>tpudoctor {e(report.tool_version)} on <code>{e(report.host)}</code></p>"]
    if cause is not None:
        where = scope_words(cause.scope) if scope_in_title else ""
        parts.append(f"<div class='cause'><h2>Root cause: {e(root_cause_headline(cause))}"
                     f"{' (' + e(where) + ')' if where else ''}</h2>"
                     f"<p class='{cause.status.value}'><b>{e(MARKERS[cause.status])} {e(cause.message)}</b></p>")
        if cause.remediation:
            parts.append(f"<p>Fix: {e(cause.remediation.text)}</p>")
            if cause.remediation.commands:
                parts.append("<pre>" + e("\n".join(plain(c) for c in cause.remediation.commands)) + "</pre>")
        ev = {k: v for k, v in cause.to_dict()["evidence"].items() if k != "traceback"}
        for key, columns, rows in evidence_tables.tables(ev):
            parts.append(f"<h3>{e(key)}</h3><table><tr>" + "".join(f"<th>{e(c)}</th>" for c in columns) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(v)}</td>" for v in row) + "</tr>" for row in rows]
            parts.append("</table>")
        if ev:
            parts.append("<details><summary>evidence</summary><pre>" + e(json.dumps(ev, indent=2)) + "</pre></details>")
        parts.append("</div>")
    scoped = any(not r.scope.is_whole for r in report.results)  # a Scope column only where it says something
    parts.append("<table><tr><th></th><th>step</th><th>check</th>" + ("<th>scope</th>" if scoped else "")
                 + "<th>result</th><th>fix</th></tr>")
    for r in report.ordered_results():
        fix = ""
        if r.remediation and r.status in (Status.FAIL, Status.WARN, Status.ERROR):
            fix = e(r.remediation.text) + ("<pre>" + e("\n".join(plain(c) for c in r.remediation.commands)) + "</pre>" if r.remediation.commands else "")
        parts.append(f"<tr><td class='{r.status.value}'>{e(MARKERS[r.status])}</td><td>{int(r.step)}</td>"
                     f"<td>{e(r.id)} {e(r.title)}</td>"
                     + (f"<td>{e(scope_words(r.scope).removeprefix('on ') or 'all')}</td>" if scoped else "")
                     + f"<td>{e(r.message)}</td><td>{fix}</td></tr>")
    parts.append(f"</table><p class='summary'>{e(summary_sentence(report))}</p></body></html>")
    return "".join(parts) + "\n"
