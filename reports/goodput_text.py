"""The goodput report for a terminal: headline, where the time went (one bar per bucket), findings."""

from __future__ import annotations

from typing import Any

from tpudoctor.reports.escape import plain
from tpudoctor.reports.goodput_summary import (
    bucket_rows,
    fixes,
    gate_line,
    headline,
    seconds_text,
    step_line,
)

MARKS = {"PASS": "[✓]", "WARN": "[!]", "FAIL": "[✗]", "SKIP": "[-]", "ERROR": "[✗]"}
BAR = 30


def render(doc: dict[str, Any], *, verbose: bool = False) -> str:
    g = doc["goodput"]
    sources = ", ".join(plain(s["source"]) for s in doc["sources"])
    out = [f"tpudoctor goodput: {sources}", plain(headline(doc)), plain(step_line(g))]
    if doc.get("wall_start"):
        out.append(f"From {plain(doc['wall_start'])} to {plain(doc['wall_end'])} (lead worker: "
                   f"{plain(doc.get('lead_worker'))}; {plain(doc['clock']['zone'])})")
    confidence = (g.get("consistency") or {}).get("confidence") or {}
    if confidence.get("level") in ("medium", "low"):
        out.append(f"Confidence in the figures: {confidence['level']}: " + plain("; ".join(confidence["reasons"])[:400]))
    out += ["", "Where did the time go"]
    for row in bucket_rows(g):
        pct = row["percent"]
        bar = "#" * min(BAR, max(0, round(BAR * pct / 100))) if pct is not None else ""  # never past the column
        value = f"{seconds_text(row['seconds']):>10} {pct:6.2f}%" if pct is not None else \
            f"{seconds_text(row['seconds']):>10}    n/a "
        out.append(f"  {row['bucket']:<40} {value}  {bar}")
        if row["note"] and (verbose or row["bucket"] == "OTHER" or pct is None):
            out.append(f"  {'':<40} {plain(row['note'][:160])}")
    if g.get("outlier_steps"):
        out += ["", f"Steps that stand out ({g['outlier_count']}; median {g['median_step_s']} s):"]
        out += [f"  step {o['step']}: {o['seconds']} s ({o['excess_s']} s over)" for o in g["outlier_steps"][:5]]
    if len(g.get("runs") or []) > 1:
        out += ["", "Starts:"]
        for run in g["runs"]:
            out.append(f"  #{run['index'] + 1}: steps {run['first_step']} to {run['last_step']}; began: "
                       f"{plain(run['start_reason'][:70])}; ended: {plain(run['end_reason'][:70])}")
    out += ["", "Findings"]
    for f in doc.get("findings") or []:
        out.append(f"  {MARKS.get(f['status'], '[?]')} {plain(f['title'])} ({plain(f['id'])})")
        if f["status"] in ("WARN", "FAIL", "ERROR") or verbose:
            out.append(f"      {plain(f['message'])}")
            out += [f"      - {plain(fix)}" for fix in fixes(f)]
    for note in g.get("notes") or []:
        out.append(f"note: {plain(note)}")
    for s in doc["sources"]:
        if s.get("problem"):
            out.append(f"note: {plain(s['source'])} is {plain(s['problem'])}")
        if s.get("non_utf8_lines"):
            out.append(f"note: {plain(s['source'])}: {s['non_utf8_lines']} line(s) had bytes that are not UTF-8 "
                       "(read as U+FFFD)")
    if doc.get("instrumented"):
        out += ["", "ml-goodput-measurement's recorder entries"] + [f"  {line}" for line in
                                                                    map(plain, doc["instrumented"].get("lines", []))]
    line = gate_line(doc)
    if line:
        out += ["", plain(line)]
    return "\n".join(out) + "\n"
