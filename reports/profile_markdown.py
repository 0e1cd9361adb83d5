"""Markdown profile report (for a pull request, an issue, or a notebook)."""

from __future__ import annotations

from tpudoctor.profile.report import ProfileReport
from tpudoctor.reports.escape import markdown as md
from tpudoctor.reports.escape import markdown_code
from tpudoctor.reports.profile_diagnosis_text import BREAKDOWN_PARTS, fixes, straggler_line, where


def render(report: ProfileReport) -> str:
    return render_document(report.to_dict())


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    return md(value)


def table(rows: list[dict], columns: list[str]) -> list[str]:
    if not rows:
        return ["_none_"]
    out = ["| " + " | ".join(md(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in rows]
    return out


def render_document(doc: dict) -> str:
    lines = [f"# tpudoctor profile: {markdown_code(doc.get('source', ''))}", ""]
    if "verdict" in doc:
        lines += [f"**Verdict: {md(doc['verdict'])}** - {md(doc.get('verdict_reason', ''))}", ""]
        st = doc["steps"]
        stats = st.get("stats") or {}
        steps_line = (f"Steps: {st['count']} found by {markdown_code(st['method'])}"
                      + (f" (program {markdown_code(st['program'])})" if st.get("program") else ""))
        if stats:
            steps_line += (f"; step time mean {stats['mean_ms']:.2f} ms, median {stats['median_ms']:.2f} ms, "
                           f"min {stats['min_ms']:.2f} ms, max {stats['max_ms']:.2f} ms.")
        lines.append(steps_line)
        lines.append("")
        pct = doc["breakdown"]["percent"]
        lines += ["## Step-time breakdown", ""] + table([{p: pct.get(p) for p in BREAKDOWN_PARTS}],
                                                         list(BREAKDOWN_PARTS)) + [""]
        lines += ["## Findings", ""]
        for f in doc["findings"]:
            lines.append(f"### {markdown_code(f['id'])} ({md(f['severity'])}): {md(f['title'])}")
            lines += ["", md(f["message"]) + (f" ({md(where(f, doc))})" if where(f, doc) else ""), ""]
            lines += [f"- {md(fix)}" for fix in fixes(f)] + [""]
        if not doc["findings"]:
            lines += ["_no findings_", ""]
        lines += ["## Compilations in the capture window", ""]
        lines += table(doc["recompilation"]["functions"], ["function", "framework", "compile_count", "compile_ms",
                                                           "share_of_capture_percent", "program_variants"]) + [""]
        lines += ["## Top device ops by self time", ""]
        lines += table(doc["device_ops"]["top_ops"][:15], ["name", "category", "count", "self_ms", "self_percent"]) + [""]
        if doc.get("roofline"):
            from tpudoctor.reports.roofline_view import (
                UNMEASURABLE,
                UNMEASURABLE_NOTE,
                op_rows,
                peaks_line,
                program_line,
            )

            r = doc["roofline"]
            lines += ["## Roofline and MFU", "", f"- {md(peaks_line(r))}", f"- {md(program_line(r))}", ""]
            rows = op_rows(r)
            lines += table(rows, list(rows[0]) if rows else []) + [""]
            if any(row["roofline eff."] == UNMEASURABLE for row in rows):
                lines += [md(UNMEASURABLE_NOTE), ""]
        lines += ["## Host-side ops", ""]
        lines += table(doc["host_ops"]["table"][:15], ["kind", "name", "count", "total_ms", "share_percent", "share_of"]) + [""]
        if len(doc.get("hosts", [])) > 1:
            lines += ["## Hosts", ""]
            lines += table([{"host": h["host"], "verdict": h["verdict"], **h["kpis"]} for h in doc["hosts"]],
                           ["host", "verdict", "step_time_mean_ms", "input_percent", "idle_percent", "compile_ms"]) + [""]
            if doc.get("straggler"):
                host = md(doc["straggler"]["host"])
                lines += [md(straggler_line(doc["straggler"])).replace(host, f"**{host}**", 1), ""]
    return "\n".join(lines) + "\n"
