"""`tpudoctor compare` speed: two captures, two saved reports, and the history gate over N reports.

    .venv/bin/python benchmarks/bench_compare.py [--source X.xplane.pb] [--history 20,200]

Each case runs the CLI in this process (after one warm-up run so imports do not count) and prints
the wall time. The captures are the real v6e capture and a copy of it; the saved reports are its
JSON report (schema 2.1, with the per-op table); the history is that report N times with step times
drawn around the real ones.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "xprof_tpu_inference_2.xplane.pb"


def _timed(argv: list[str]) -> tuple[float, int]:
    from tpudoctor.cli import main

    sink = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    return time.perf_counter() - started, int(code)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--history", default="20,200", help="history sizes, comma-separated")
    args = parser.parse_args()
    if not args.source.exists():
        print(f"capture not found: {args.source}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        a, b = tmp / "a.xplane.pb", tmp / "b.xplane.pb"
        shutil.copyfile(args.source, a)
        shutil.copyfile(args.source, b)
        report = tmp / "a.json"
        _timed(["profile", "analyze", str(a), "--format", "json", "-o", str(report)])  # warm-up and the report
        shutil.copyfile(report, tmp / "b.json")
        print(f"{'case':<44} {'wall s':>8}  exit")
        for name, argv in (
            ("two captures (analysed, then compared)", ["compare", str(a), str(b), "--format", "json"]),
            ("two saved reports", ["compare", str(report), str(tmp / "b.json"), "--format", "json"]),
            ("two saved reports, markdown", ["compare", str(report), str(tmp / "b.json"), "--format", "markdown"]),
        ):
            seconds, code = _timed(argv)
            print(f"{name:<44} {seconds:>8.3f}  {code}")
        doc = json.loads(report.read_text())
        rng = random.Random(7)
        for size in (int(n) for n in args.history.split(",")):
            folder = tmp / f"history-{size}"
            folder.mkdir()
            for i in range(size):
                run = copy.deepcopy(doc)
                for kpi in ("step_time_mean_ms", "step_time_median_ms"):
                    run["kpis"][kpi] *= rng.gauss(1.0, 0.01)
                path = folder / f"run-{i:04d}.json"
                path.write_text(json.dumps(run))
                os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
            seconds, code = _timed(["compare", "--history", str(folder), "--last", str(size), str(report),
                                    "--format", "json"])
            kb = report.stat().st_size / 1024
            print(f"{f'history gate, last {size} reports ({kb:.0f} KB each)':<44} {seconds:>8.3f}  {code}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
