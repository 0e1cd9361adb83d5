"""The diag report's view: the headline (what failed, named), the faults injected, the findings, the per-chip
table, each chip's matmul rate as a bar (HTML), and the all-reduce bandwidths."""

from __future__ import annotations

from typing import Any

from tpudoctor.findings import Status
from tpudoctor.reports.view import (
    Bar,
    Chart,
    Section,
    Suite,
    Table,
    View,
    findings_of,
    grouped,
    properties,
)

COLUMNS = (("chip", "chip", "{}"), ("matmul_tflops_p10", "matmul TFLOP/s p10", "{:.4g}"),
           ("matmul_slowness", "matmul time vs peers", "{:+.1%}"), ("hbm_gbps_median", "bandwidth GB/s", "{:.4g}"),
           ("hbm_slowness", "bandwidth time vs peers", "{:+.1%}"), ("gemm_relative_error", "GEMM error", "{:.1e}"),
           ("gemm_bits_agree", "bits agree", "{}"))
"""Key, title, form. A ``_slowness`` cell is how much longer the chip's runs take than its peers' (+30.8 %: its rate
is 1/1.308 of theirs, 23.5 % lower)."""

NAMED_FAILURES = 3
"""The headline names this many failed tests that name no chip, then counts the rest."""


def failed_words(doc: dict[str, Any]) -> str:
    """What failed, named: the chips a failing test names, then the titles of those that name none (the runtime,
    the node, the count of chips)."""
    by_status = grouped(findings_of(doc), "status")
    failing = by_status.get(Status.FAIL, []) + by_status.get(Status.ERROR, [])
    chips = list(dict.fromkeys(c for f in failing for c in f.scope.chips))
    others = list(dict.fromkeys(f.title for f in failing if not f.scope.chips))
    parts = [f"{'chip' if len(chips) == 1 else 'chips'} {', '.join(chips)} failed"] if chips else []
    if others:
        more = f"; {len(others) - NAMED_FAILURES} more" if len(others) > NAMED_FAILURES else ""
        parts.append(f"{'also ' if chips else ''}failed: {'; '.join(others[:NAMED_FAILURES])}{more}")
    return "; ".join(parts)


def headline(doc: dict[str, Any]) -> str:
    summary = doc["summary"]
    bad = summary["FAIL"] + summary["ERROR"]
    verdict = failed_words(doc) if bad else ("warnings" if summary["WARN"] else "healthy")
    devices = (f"{len(doc['devices'])} {doc['backend']} device(s)" if doc["backend"] != "none"
               else "no backend loaded")
    skipped = f", {summary['SKIP']} skipped" if summary.get("SKIP") else ""
    return (f"tpudoctor diag -r {doc['level']} on {doc['host']}: {verdict} ({devices}, {summary['PASS']} passed, "
            f"{summary['WARN']} warned, {bad} failed{skipped}, {doc['duration_s']:.0f} s)")


def cell(row: dict[str, Any], key: str, form: str) -> str:
    value = row.get(key)
    if value is None:
        return "-"
    if key.endswith("_slowness"):
        value = value - 1.0
    return form.format(value)


def _chips(doc: dict[str, Any]) -> Section | None:
    columns = [c for c in COLUMNS if any(c[0] in row for row in doc["chips"])]
    if not doc["chips"] or len(columns) < 2:
        return None
    rows = doc["chips"]
    table = Table(tuple(title for _, title, _ in columns),
                  tuple(tuple(cell(row, key, form) for key, _, form in columns) for row in rows),
                  marked_rows=frozenset(i for i, r in enumerate(rows) if r.get("matmul_slow")))
    chart = None
    if any("matmul_tflops_p10" in row for row in rows):
        chart = Chart("matmul rate per chip (TFLOP/s, p10)", tuple(
            Bar(str(row.get("chip", "")), float(row.get("matmul_tflops_p10") or 0), cell(row, "matmul_tflops_p10",
                                                                                        "{:.4g}"), bool(row.get("matmul_slow")))
            for row in rows))
    return Section("Chips", table=table, chart=chart)


def _bandwidth(doc: dict[str, Any]) -> Section | None:
    notes = []
    if doc.get("allreduce"):
        axes = doc["allreduce"]["axes"]
        notes.append("all-reduce bus bandwidth: " + ", ".join(
            f"axis {a} (x{axes[a]}) {v:.3g} GB/s" for a, v in doc["allreduce"]["bus_gbps_median"].items()))
    if doc.get("dcn"):
        dcn = doc["dcn"]
        notes.append(f"all-reduce across {dcn['groups']} {dcn['across']} (DCN): {dcn['bus_gbps_median']:.3g} GB/s "
                     "bus bandwidth")
    return Section("Collectives", notes=tuple(notes)) if notes else None


def view(doc: dict[str, Any]) -> View:
    findings = findings_of(doc)
    notes = ("injected: " + "; ".join(doc["faults_injected"]),) if doc["faults_injected"] else ()
    sections = [Section("Findings", findings=findings), _chips(doc), _bandwidth(doc)]
    suite = Suite(f"tpudoctor diag -r {doc['level']}", "tpudoctor.diag", duration_s=doc["duration_s"],
                  hostname=str(doc["host"]), properties=properties((
                      ("backend", doc["backend"]), ("devices", len(doc["devices"])),
                      ("faults_injected", "; ".join(doc["faults_injected"])))))
    return View("diag", headline(doc), notes, tuple(sections), findings, suite)
