"""Markdown profile report (for a pull request, an issue, or a notebook)."""

from __future__ import annotations

from tpudoctor.profile.report import ProfileReport
from tpudoctor.reports.escape import markdown as md
from tpudoctor.reports.escape import markdown_code, markdown_prose
from tpudoctor.reports.profile_diagnosis_text import (
    BREAKDOWN_PARTS,
    confidence_line,
    device_time_split,
    fixes,
    op_category,
    steps_line,
    straggler_line,
    where,
)


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
        if doc.get("verdict_confidence"):
            lines += [f"Confidence: **{md(doc['verdict_confidence'].get('level'))}**"
                      + "".join(f"\n- {md(r)}" for r in doc["verdict_confidence"].get("reasons") or []), ""]
        st = doc["steps"]
        stats = st.get("stats") or {}
        steps = md(steps_line(st))
        if stats:
            steps += (f"; step time mean {stats['mean_ms']:.2f} ms, median {stats['median_ms']:.2f} ms, "
                      f"min {stats['min_ms']:.2f} ms, max {stats['max_ms']:.2f} ms.")
        lines.append(steps)
        lines.append("")
        pct = doc["breakdown"]["percent"]
        if st.get("count"):
            lines += ["## Step-time breakdown", ""] + table([{p: pct.get(p) for p in BREAKDOWN_PARTS}],
                                                             list(BREAKDOWN_PARTS)) + [""]
        lines += ["## Findings", ""]
        for f in doc["findings"]:
            lines.append(f"### {markdown_code(f['id'])} ({md(f['severity'])}): {md(f['title'])}")
            lines += ["", md(f["message"]) + (f" ({md(where(f, doc))})" if where(f, doc) else ""), ""]
            if f.get("confidence"):
                lines += [f"_Confidence: {md(confidence_line(f['confidence']))}_", ""]
            lines += [f"- {markdown_prose(fix)}" for fix in fixes(f)] + [""]
        if not doc["findings"]:
            lines += ["_no findings_", ""]
        lines += ["## Compilations in the capture window", ""]
        lines += table(doc["recompilation"]["functions"], ["function", "framework", "compile_count", "compile_ms",
                                                           "share_of_capture_percent", "program_variants"]) + [""]
        dev = doc["device_ops"]
        if dev.get("programs"):
            lines += ["## Programs by device time", "", md(device_time_split(dev)) + ".", ""]
            lines += table(dev["programs"][:20], ["program", "program_id", "runs", "devices", "device_ms", "mean_ms",
                                                  "share_percent"]) + [""]
        lines += ["## Top device ops by self time", "", "One row per program and op, as xprof's hlo_stats.", ""]
        lines += table([{**op, "category": op_category(op)} for op in dev["top_ops"][:15]],
                       ["program", "name", "category", "count", "self_ms", "self_percent"]) + [""]
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
