"""What every diag renderer says the same way: the headline and the per-chip table's columns."""

from __future__ import annotations

from typing import Any

COLUMNS = (("chip", "chip", "{}"), ("matmul_tflops_p10", "matmul TFLOP/s p10", "{:.4g}"),
           ("matmul_slowness", "vs peers", "{:+.1%}"), ("hbm_gbps_median", "bandwidth GB/s", "{:.4g}"),
           ("hbm_slowness", "vs peers", "{:+.1%}"), ("gemm_relative_error", "GEMM error", "{:.1e}"),
           ("gemm_bits_agree", "bits agree", "{}"))


def headline(doc: dict[str, Any]) -> str:
    summary = doc["summary"]
    bad = summary["FAIL"] + summary["ERROR"]
    verdict = "a chip failed" if bad else ("warnings" if summary["WARN"] else "healthy")
    return (f"tpudoctor diag -r {doc['level']} on {doc['host']}: {verdict} ({len(doc['devices'])} {doc['backend']} "
            f"device(s), {summary['PASS']} passed, {summary['WARN']} warned, {bad} failed, {doc['duration_s']:.0f} s)")


def cell(row: dict[str, Any], key: str, form: str) -> str:
    value = row.get(key)
    if value is None:
        return "-"
    if key.endswith("_slowness"):
        value = value - 1.0
    return form.format(value)


def columns_present(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [c for c in COLUMNS if any(c[0] in row for row in doc["chips"])]
