"""The pipeline what-if against ByteDance's published results (arXiv 2505.05713's artifact), and its time on
64 workers x 100 steps.

    .venv/bin/python benchmarks/pipeline_whatif_oracle.py [DATA_DIR]

DATA_DIR (default ../shared/data/bytedance_straggler) holds trace-{AR,SE,ST}.parquet with their meta, result,
mw and ms files. For each trace it prints S, the largest dp-rank, stage and op-type slowdowns, M_W and M_S,
ours beside the published ones, and the analysis time. Then it tiles SE (64 workers, 43 steps) to 100 steps
and times reading + the what-if (every scenario: ideal, one per op type, dp rank and stage, three per worker:
~250 replays) against the 10 s target. Exit 1 when a figure is off by more than 0.05 or the time is over."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

from tpudoctor.profile.analysis.pipeline_whatif import pipeline_whatif
from tpudoctor.profile.op_trace import read_op_trace

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "bytedance_straggler"  # ../shared of a checkout
if not DEFAULT.is_dir():
    DEFAULT = Path("/work/shared/data/bytedance_straggler")
TOLERANCE, TARGET_S, STEPS = 0.05, 10.0, 100


def compare(data: Path, trace: str) -> bool:
    started = time.perf_counter()
    t = read_op_trace(data / f"trace-{trace}.parquet")
    w = pipeline_whatif(t.ops, t.meta)
    elapsed = time.perf_counter() - started
    res = json.loads((data / f"result-{trace}.json").read_text())
    mw = json.loads((data / f"mw-{trace}.json").read_text())["Mw"]
    ms = json.loads((data / f"ms-{trace}.json").read_text())["Ms"]
    rows = [("S", w.slowdown, res["blocking_slowdown"])]
    for group in ("dp_rank", "stage", "optype"):
        name, value = max(res[f"blocking_decompose_by_{group}"].items(), key=lambda kv: kv[1])
        ours = getattr(w, f"by_{group}").iloc[0]
        rows.append((f"largest {group} ({name}; ours {ours['group']})", ours["slowdown"], value))
    rows += [("M_W", w.m_w, mw), ("M_S", w.m_s, ms)]
    ok = True
    print(f"{trace}: {w.workers} workers x {w.steps} steps, {elapsed:.2f} s, cause: {w.cause}")
    for label, ours, theirs in rows:
        off = abs(ours - theirs)
        ok &= bool(off <= TOLERANCE) and w.by_dp_rank is not None
        print(f"  {label:<52} ours {ours:8.4f}  published {theirs:8.4f}  off {off:.4f}")
    return ok


def tiled(data: Path) -> bool:
    ops = read_op_trace(data / "trace-SE.parquet").ops
    steps = sorted(ops["step"].unique())
    parts, n = [], 0
    while n < STEPS:
        for s in steps[: STEPS - n]:
            parts.append(ops[ops["step"] == s].assign(step=n))
            n += 1
    big = pd.concat(parts, ignore_index=True)
    path = Path("/tmp") / "tpudoctor-trace-SE100.parquet"
    big.to_parquet(path)
    started, cpu = time.perf_counter(), time.process_time()
    t = read_op_trace(path)
    w = pipeline_whatif(t.ops, t.meta)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    path.unlink()
    print(f"SE tiled: {w.workers} workers x {w.steps} steps ({len(big):,} ops): read + what-if {elapsed:.2f} s "
          f"wall, {cpu:.2f} s CPU (target < {TARGET_S:.0f} s); S {w.slowdown:.4f}")
    return elapsed < TARGET_S


def main(argv: list[str]) -> int:
    data = Path(argv[0]) if argv else DEFAULT
    if not (data / "trace-ST.parquet").is_file():
        print(f"no traces under {data}", file=sys.stderr)
        return 2
    ok = all([compare(data, t) for t in ("AR", "SE", "ST")])
    ok &= tiled(data)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
