"""KPI deltas between two profile reports, with the direction that counts as better."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from tpudoctor.profile.compare_report import PROFILE_COMPARE

# kpi -> (lower_is_better, unit label)
KPIS = {
    "step_time_mean_ms": (True, "ms"),
    "step_time_median_ms": (True, "ms"),
    "input_percent": (True, "%"),
    "idle_percent": (True, "%"),
    "compute_percent": (False, "%"),
    "duty_cycle_percent": (False, "%"),
    "compile_count": (True, ""),
    "compile_ms": (True, "ms"),
    "host_callback_ms": (True, "ms"),
    "mfu_percent": (False, "%"),
}
# KPIs whose relative worsening trips --fail-on-regression (percent points for *_percent).
GATED = ("step_time_mean_ms", "compile_ms")
GATED_POINTS = ("input_percent", "idle_percent")


def parse_percent(text: str) -> float:
    """``--fail-on-regression``: the one percentage parser (``tpudoctor.config.parse_percent``), any size."""
    from tpudoctor.config import parse_percent as parse

    return parse(text, flag="--fail-on-regression", below=None)


def load_document(path: str, *, cluster: str | None = None, on_progress=None,
                  disabled_plugins: Collection[str] = ()) -> dict:
    """A report JSON as written by ``profile analyze --format json`` (2.x, or 1.x upgraded), or the
    document of a capture analysed now by the library pipeline (on the Dask ``cluster`` if given; its
    rules less ``disabled_plugins``)."""
    p = Path(path)
    if p.is_file() and p.suffix == ".json":
        from tpudoctor.profile.document import (
            DOCUMENT_KIND,
            SCHEMA_VERSION,
            upgrade_profile_report_v1,
        )
        from tpudoctor.report_file import read_document

        return read_document(p, what="profile report", schema="profile_diagnosis", schema_version=SCHEMA_VERSION,
                             hint="make one with: tpudoctor profile analyze CAPTURE --format json -o report.json",
                             upgrades={"1": upgrade_profile_report_v1}, kind=DOCUMENT_KIND,
                             reads="compare reads profile reports (tpudoctor profile analyze --format json), or two "
                                   "goodput reports")
    from tpudoctor.profile.pipeline import analyze

    return analyze(path, cluster=cluster, on_progress=on_progress, disabled_plugins=disabled_plugins).to_dict()


MAX_DIFF_ROWS = 20
"""Ops listed per class (movers, added, removed, slower, faster) in the comparison."""


def compare(a, b, *, threshold_percent: float | None = None) -> dict:
    """Comparability first, then KPI, op-level and top-op deltas of candidate ``b`` against baseline
    ``a`` (each a ``ProfileReport`` or its document)."""
    from tpudoctor.profile.comparability import compare_documents

    a = a if isinstance(a, dict) else a.to_dict()
    b = b if isinstance(b, dict) else b.to_dict()
    comparability = compare_documents(a, b)
    op_diff, op_diff_note = _op_diff(a, b)
    rows = []
    regressed_by = []
    for key, (lower_better, unit) in KPIS.items():
        va, vb = a["kpis"].get(key), b["kpis"].get(key)
        row = {"kpi": key, "unit": unit, "baseline": va, "candidate": vb, "delta": None, "delta_percent": None,
               "direction": "n/a"}
        if va is not None and vb is not None:
            delta = vb - va
            row["delta"] = float(f"{delta:.6g}")  # significant figures: a small KPI (MFU) keeps its change
            row["delta_percent"] = round(100 * delta / va, 2) if va else None
            if abs(delta) < 1e-9:
                row["direction"] = "same"
            else:
                row["direction"] = "better" if (delta < 0) == lower_better else "worse"
            if threshold_percent is not None and row["direction"] == "worse":
                if key in GATED and (100 * delta / va > threshold_percent if va else delta > 0):
                    regressed_by.append(key)
                elif key in GATED_POINTS and delta > threshold_percent:
                    regressed_by.append(key)
        rows.append(row)
    # an op is the same op only inside one program (reports before 2.2 name no program: '')
    ops_a = {(o.get("program") or "", o["name"]): o for o in a.get("device_ops", {}).get("top_ops", [])}
    ops_b = {(o.get("program") or "", o["name"]): o for o in b.get("device_ops", {}).get("top_ops", [])}
    ops = []
    for program, name in list(dict.fromkeys([*ops_b, *ops_a]))[:15]:
        sa = (ops_a.get((program, name)) or {}).get("self_ms")
        sb = (ops_b.get((program, name)) or {}).get("self_ms")
        ops.append({"program": program, "name": name, "baseline_self_ms": sa, "candidate_self_ms": sb,
                    "delta_ms": round(sb - sa, 4) if sa is not None and sb is not None else None})
    return {
        "kind": PROFILE_COMPARE,
        "comparable": comparability.comparable,
        "comparability": comparability.to_dict(),
        "baseline": {"source": a.get("source"), "verdict": a.get("verdict")},
        "candidate": {"source": b.get("source"), "verdict": b.get("verdict")},
        "op_diff": op_diff,
        "op_diff_note": op_diff_note,
        "kpis": rows,
        "top_ops": ops,
        "threshold_percent": threshold_percent,
        "regressed": bool(regressed_by),
        "regressed_by": regressed_by,
    }


def _op_diff(a: dict, b: dict) -> tuple[dict | None, str | None]:
    """The op-level diff of two documents' per-op tables (time per step where both have steps), or
    None and why (a report saved before the per-op table existed)."""
    missing = [side for side, doc in (("baseline", a), ("candidate", b)) if not (doc.get("op_table") or {}).get("ops")]
    if missing:
        return None, (f"no per-op table in the {' and '.join(missing)} (a report saved by an older tpudoctor, "
                      "or a capture without device ops): KPIs compared only; analyse the capture again "
                      "to compare ops")
    import pandas as pd

    from tpudoctor.profile.op_diff import diff_ops

    def text(value):  # a lone surrogate (JSON allows "\ud800") is no text pandas' Arrow strings can hold
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if isinstance(value, str) else value

    def table(doc: dict) -> pd.DataFrame:
        return pd.DataFrame.from_records([{k: text(v) for k, v in op.items()} for op in doc["op_table"]["ops"]])

    steps_a, steps_b = (a.get("steps") or {}).get("count") or None, (b.get("steps") or {}).get("count") or None
    diff = diff_ops(table(a), table(b), baseline_steps=steps_a, candidate_steps=steps_b)
    out = diff.to_dict(max_rows=MAX_DIFF_ROWS)
    truncated = [side for side, doc in (("baseline", a), ("candidate", b))
                 if doc["op_table"].get("ops_total", 0) > len(doc["op_table"]["ops"])]
    out["rates"] = [c.removeprefix("delta_") for c in diff.ops.columns if c.startswith("delta_") and c.endswith("_per_s")]
    note = (f"the {' and '.join(truncated)} report lists only its top {a['op_table'].get('max_ops')} ops by time: "
            "ops below them count as added or removed") if truncated else None
    return out, note
