"""What every diag renderer says the same way: the headline and the per-chip table's columns."""

from __future__ import annotations

from typing import Any

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
    failing = [f for f in doc["findings"] if f["status"] in ("FAIL", "ERROR")]
    chips = list(dict.fromkeys(c for f in failing for c in (f.get("scope") or {}).get("chips") or ()))
    others = list(dict.fromkeys(f["title"] for f in failing if not (f.get("scope") or {}).get("chips")))
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


def columns_present(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [c for c in COLUMNS if any(c[0] in row for row in doc["chips"])]
