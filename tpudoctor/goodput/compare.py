"""Two goodput reports side by side: ETTR, wall and productive time, every bucket, restarts; what got worse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tpudoctor.goodput.buckets import BUCKETS

FIGURES = (("ettr", False, ""), ("goodput_percent", False, "%"), ("wall_s", None, "s"), ("productive_s", False, "s"),
           ("median_step_s", True, "s"), ("restarts", True, ""), ("repeated_steps", True, ""),
           ("checkpoint_saves", None, ""), ("steps", False, ""))
"""(figure, lower is better (None: neither), unit)."""


def is_goodput_report(path: str) -> bool:
    """A JSON file whose ``kind`` is ``goodput`` (read only its head: the reports are small anyway)."""
    p = Path(path)
    if not (p.is_file() and p.suffix == ".json"):
        return False
    try:
        with p.open("rb") as handle:
            head = handle.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    return '"kind": "goodput"' in head or '"kind":"goodput"' in head


def load_goodput_document(path: str) -> dict[str, Any]:
    from tpudoctor.goodput.analyze import SCHEMA_VERSION
    from tpudoctor.report_file import read_document

    return read_document(path, what="goodput report", schema="goodput_report", schema_version=SCHEMA_VERSION,
                         hint="make one with: tpudoctor goodput LOG --format json -o goodput.json")


def compare_goodput(a: dict[str, Any], b: dict[str, Any], *, threshold_points: float | None = None) -> dict[str, Any]:
    """Candidate ``b`` against baseline ``a``. With ``threshold_points``, an ETTR drop of more than that many
    percentage points (or a bucket growing by more) is a regression."""
    ga, gb = a["goodput"], b["goodput"]
    rows = []
    for key, lower_better, unit in FIGURES:
        rows.append(_row(key, ga.get(key), gb.get(key), lower_better, unit))
    for bucket in BUCKETS:
        pa = ((ga.get("badput") or {}).get(bucket) or {}).get("percent")
        pb = ((gb.get("badput") or {}).get(bucket) or {}).get("percent")
        rows.append(_row(f"{bucket} %", pa, pb, True, "pt"))
    regressed_by = []
    if threshold_points is not None:
        ettr = next(r for r in rows if r["figure"] == "goodput_percent")
        if ettr["delta"] is not None and -ettr["delta"] > threshold_points:
            regressed_by.append("goodput_percent")
        regressed_by += [r["figure"] for r in rows if r["unit"] == "pt" and r["delta"] is not None
                         and r["delta"] > threshold_points]
    judged = ga.get("ettr") is not None and gb.get("ettr") is not None
    return {"kind": "tpudoctor.goodput_compare",
            "baseline": {"sources": [s["source"] for s in a["sources"]], "ettr": ga.get("ettr")},
            "candidate": {"sources": [s["source"] for s in b["sources"]], "ettr": gb.get("ettr")},
            "comparable": judged,
            "comparability": {"reasons": [] if judged else ["a report has no ETTR (its log had no timestamps)"]},
            "figures": rows, "threshold_points": threshold_points,
            "regressed": bool(regressed_by), "regressed_by": regressed_by}


def _row(name: str, a: Any, b: Any, lower_better: bool | None, unit: str) -> dict[str, Any]:
    row = {"figure": name, "unit": unit, "baseline": a, "candidate": b, "delta": None, "direction": "n/a"}
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        delta = b - a
        row["delta"] = round(delta, 4)
        if abs(delta) < 1e-9:
            row["direction"] = "same"
        elif lower_better is None:
            row["direction"] = "changed"
        else:
            row["direction"] = "better" if (delta < 0) == lower_better else "worse"
    return row

