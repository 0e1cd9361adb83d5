"""Self-contained HTML hang report (no external assets)."""

from __future__ import annotations

from tpudoctor.hang.report import HangReport
from tpudoctor.reports import escape
from tpudoctor.reports.hang_words import (
    VERDICT_WORDS,
    category_words,
    first_member_state,
    frame_lines,
    group_progress,
    members_words,
    summary_line,
)
from tpudoctor.reports.markers import MARKERS, scope_words

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1f2328;max-width:1100px}
h1{font-size:1.4rem} .PASS{color:#1a7f37}.WARN{color:#9a6700}.FAIL{color:#cf222e}.SKIP{color:#6e7781}.ERROR{color:#8250df}
.cause{border:2px solid #cf222e;border-radius:6px;padding:1rem;margin:1rem 0;background:#fff5f5}
.odd{background:#fff8c5}
pre{background:#f6f8fa;padding:.6rem;border-radius:4px;overflow-x:auto}
table{border-collapse:collapse;width:100%} td,th{border-bottom:1px solid #d0d7de;padding:.35rem .5rem;text-align:left;vertical-align:top}
"""
VERDICT_CLASS = {"hung": "FAIL", "progressing": "PASS", "unknown": "WARN", "no_process": "FAIL"}


def render(report: HangReport) -> str:
    e = escape.html
    cause = report.root_cause
    headline = cause.headline if cause is not None and report.verdict == "hung" else report.verdict_why
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>tpudoctor hang</title>",
             f"<style>{_CSS}</style></head><body><h1>tpudoctor hang</h1>",
             f"<p>tpudoctor {e(report.tool_version)}: {e(summary_line(report))}</p>",
             f"<div class='cause'><h2 class='{VERDICT_CLASS[report.verdict]}'>{VERDICT_WORDS[report.verdict]} "
             f"(confidence {e(report.confidence)})</h2><p><b>{e(headline)}</b></p>"]
    if cause is not None and cause.stalled_since is not None and report.verdict == "hung":
        parts.append(f"<p>No step since {e(cause.stalled_since.isoformat())}.</p>")
    if report.decision is not None:
        d = report.decision
        parts.append(f"<h3>Decision: {e(d.action)} (confidence {e(d.confidence)})</h3><p>{e(d.why)}.</p><p>{e(d.text)}</p>")
        if d.commands:
            parts.append("<pre>" + e("\n".join(d.commands)) + "</pre>")
    parts.append("</div>")
    if report.groups:
        parts.append("<h2>Where the processes stand</h2><table><tr><th>processes</th><th>where</th>"
                     "<th>progress</th><th>stack (training thread)</th></tr>")
        for group in report.groups:
            state = first_member_state(report, group)
            where = f"{state.frame.function} ({state.frame.where})" if state and state.frame else ""
            parts.append(f"<tr class='{'odd' if group.odd_one_out else ''}'><td>{e(members_words(group.members))}</td>"
                         f"<td>{e(category_words(group.category))}<br><code>{e(where)}</code></td>"
                         f"<td>{e(group_progress(report, group))}</td>"
                         f"<td><pre>{e(chr(10).join(frame_lines(group.stack)))}</pre></td></tr>")
        parts.append("</table>")
    parts.append("<h2>Findings</h2><table><tr><th></th><th>finding</th><th>scope</th><th>result</th><th>fix</th></tr>")
    for f in report.findings:
        fix = ""
        if f.remediation and f.status.value != "PASS":
            fix = e(f.remediation.text) + ("<pre>" + e("\n".join(f.remediation.commands)) + "</pre>"
                                           if f.remediation.commands else "")
        parts.append(f"<tr><td class='{f.status.value}'>{e(MARKERS[f.status])}</td><td>{e(f.id)} {e(f.title)}</td>"
                     f"<td>{e(scope_words(f.scope).removeprefix('on ') or 'all')}</td><td>{e(f.message)}</td>"
                     f"<td>{fix}</td></tr>")
    parts.append("</table></body></html>")
    return "".join(parts) + "\n"
