"""Every real capture in ../shared/data in one table: tpudoctor's view and xprof's, side by side.

    .venv/bin/python benchmarks/profile_real_captures.py [--data DIR] [--markdown]

Per capture (``*.xplane.pb`` in the data folder and its subfolders; ``TPUDOCTOR_SHARED_DATA`` or
``--data`` point elsewhere): tpudoctor's verdict, its confidence, the steps and how they were found,
the mean step time and the HLO-op total (self time of every HLO op, all devices); then xprof's own
view of the same file (installed by the test extra): the steps its overview page found, its mean
step time, and its hlo_stats total. xprof runs on a copy of each file in a temporary folder (it
writes a cache next to its input).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("TPUDOCTOR_SHARED_DATA", REPO.parent / "shared" / "data"))
STEP_SOURCES = {"device-steps-line": "Steps line", "host-step-annotations": "step markers",
                "pseudo-steps-xla-modules": "pseudo: XLA modules", "pseudo-steps-host-program-runs": "pseudo: host runs",
                "none": "none"}
COLUMNS = ("capture", "verdict", "confidence", "steps (source)", "step ms", "HLO ops ms",
           "xprof steps", "xprof step ms", "xprof hlo_stats ms", "HLO diff %")


def captures(data: Path) -> list[Path]:
    return sorted(data.glob("*.xplane.pb")) + sorted(data.glob("*/*.xplane.pb"))


def tpudoctor_row(path: Path) -> dict:
    import tpudoctor.profile

    doc = tpudoctor.profile.analyze(str(path)).to_dict()
    steps = doc["steps"]
    source = "micro-benchmark" if steps.get("micro_benchmark") else STEP_SOURCES.get(steps["method"], steps["method"])
    return {"verdict": doc["verdict"], "confidence": doc["verdict_confidence"]["level"],
            "steps": f"{steps['count']} ({source})", "step_ms": (steps.get("stats") or {}).get("mean_ms"),
            "hlo_ms": doc["device_ops"]["hlo_op_ms"], "reason": doc["verdict_reason"]}


def xprof_row(path: Path) -> dict:
    try:
        from xprof.convert import raw_to_tool_data as raw
    except ImportError:
        return {"error": "xprof is not installed (pip install -e '.[test]')"}
    with tempfile.TemporaryDirectory(prefix="xprof-") as folder:
        copy = Path(folder) / path.name
        shutil.copyfile(path, copy)
        overview, _ = raw.xspace_to_tool_data([str(copy)], "overview_page", {"use_saved_result": False})
        stats, _ = raw.xspace_to_tool_data([str(copy)], "hlo_stats", {"use_saved_result": False})
    steps = next(t for t in json.loads(overview) if isinstance(t, dict) and "steptime_ms_average" in t.get("p", {}))
    table = json.loads(stats)
    columns = [c["id"] for c in table["cols"]]
    rows = [dict(zip(columns, [cell.get("v") for cell in row["c"]], strict=True)) for row in table.get("rows", [])]
    return {"steps": len(steps.get("rows", [])), "step_ms": float(steps["p"]["steptime_ms_average"]),
            "hlo_ms": sum(r["total_self_time"] for r in rows) / 1e3}


def _short(name: str, width: int = 44) -> str:
    """A long capture name cut in the middle (the ends tell captures apart)."""
    return name if len(name) <= width else name[:width // 2 - 1] + "..." + name[-(width // 2 - 2):]


def _ms(value) -> str:
    return "-" if value is None else f"{value:,.3f}"


def table_rows(data: Path) -> list[tuple[str, ...]]:
    out = []
    for path in captures(data):
        mine, theirs = tpudoctor_row(path), xprof_row(path)
        if "error" in theirs:
            xprof_cells = (theirs["error"], "", "", "")
        else:
            diff = (100 * (mine["hlo_ms"] - theirs["hlo_ms"]) / theirs["hlo_ms"]) if theirs["hlo_ms"] else 0.0
            xprof_cells = (str(theirs["steps"]), _ms(theirs["step_ms"] or None), _ms(theirs["hlo_ms"]), f"{diff:+.2f}")
        name = _short(path.name.removesuffix(".xplane.pb"))
        out.append((name, mine["verdict"], mine["confidence"], mine["steps"], _ms(mine["step_ms"]), _ms(mine["hlo_ms"]),
                    *xprof_cells))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of real captures (../shared/data)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table (the one in docs/guide/profile.md)")
    args = parser.parse_args()
    if not args.data.is_dir() or not captures(args.data):
        print(f"no real capture under {args.data} (../shared/data lives beside the checkout; or set "
              "TPUDOCTOR_SHARED_DATA / --data)", file=sys.stderr)
        return 2
    rows = table_rows(args.data)
    if args.markdown:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "---|" * len(COLUMNS))
        for row in rows:
            print("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        return 0
    widths = [max(len(COLUMNS[i]), *(len(r[i]) for r in rows)) for i in range(len(COLUMNS))]
    print("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)))
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
