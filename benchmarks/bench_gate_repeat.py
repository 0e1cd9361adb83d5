"""The CI gate of ``tpudoctor bench``, N times over: each round records a baseline on the smallest reference
model, reruns against it (must exit 0), reruns with a known slowdown (``--inject-step-delay``, sized from the
baseline's own step time so that throughput drops by ``--slowdown``: must exit 1) and with another batch size
(a key mismatch: must exit 2). Prints one row per round and how many rounds passed, and beside each round
the exits (rerun/slowed) that the gate gave before warm-up detection and the noise rule, on the same windows,
and (``1 run``) the exits it gave on the first run alone, before a suspected drop was timed again
(``--confirm-runs``).

    python benchmarks/bench_gate_repeat.py [--runs 10] [--model dense] [--steps 200] [--repeats 8]
                                          [--slowdown 0.25] [--bursts ON:OFF] [--keep DIR]

``--bursts ON:OFF`` runs a neighbour that keeps one core busy ON seconds in every ON+OFF, the light load under
which the gate was seen to fail a clean rerun.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from neighbour import start_bursts  # benchmarks/ is the script's own folder, first on sys.path

EXPECTED = {"rerun": 0, "slowed": 1, "mismatch": 2}


def bench(args: argparse.Namespace, *extra: str, out: Path) -> tuple[int, dict | None, float]:
    """Exit status, the JSON document (None when none was written) and seconds."""
    command = [sys.executable, "-m", "tpudoctor", "bench", "--model", args.model, "--steps", str(args.steps),
               "--repeats", str(args.repeats), "--format", "json", "-o", str(out), *extra]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    document = json.loads(out.read_text()) if out.exists() and out.stat().st_size else None
    if done.returncode not in (0, 1, 2):
        sys.stderr.write(done.stderr[-2000:])
    return done.returncode, document, seconds


def gate_words(document: dict | None) -> str:
    if not document or not document.get("comparison"):
        return "-"
    g = document["comparison"]["gate"]
    p = g["p_value_slower"] if g["ratio"] < 1 else g["p_value_faster"]
    noise = f" x{g['noise_ratio']:.1f}" if g.get("noise_ratio") is not None else ""
    confirmation = document["comparison"].get("confirmation")
    again = "".join(f" then {run['gate']['change_pct']:+.1f}%" for run in confirmation["runs"]) if confirmation else ""
    return f"{g['verdict']} {g['change_pct']:+.1f}% p={p:.2g}{noise}{again}"


def gate_before(baseline: dict, document: dict | None) -> str:
    """The exit the gate gave before warm-up detection and the noise rule: every window, U test and tolerance."""
    if not document or not document.get("comparison"):
        return "-"
    from tpudoctor.bench.gate import compare

    g = document["comparison"]["gate"]
    before = compare(baseline["measurement"]["samples"], document["measurement"]["samples"],
                     tolerance=g["tolerance"], alpha=g["alpha"])
    return "1" if before.ratio < 1 - before.tolerance and before.p_value_slower < before.alpha else "0"


def one_run_exit(document: dict | None) -> str:
    """The exit on the first run alone: what the gate gave before confirmation runs."""
    if not document or not document.get("comparison"):
        return "-"
    comparison = document["comparison"]
    first = (comparison.get("confirmation") or {}).get("first_verdict", comparison["gate"]["verdict"])
    return "1" if first == "regression" else "0"


def one_round(args: argparse.Namespace, folder: Path) -> dict:
    baseline = folder / "baseline.json"
    code, base_doc, base_s = bench(args, "--save-baseline", str(baseline), out=folder / "base-run.json")
    if code != 0 or base_doc is None or not baseline.exists():
        return {"baseline": f"exit {code}", "passed": False}
    m = base_doc["measurement"]
    step_ms = m["step_time_ms_median"]
    delay_ms = step_ms * args.slowdown / (1.0 - args.slowdown)  # throughput x (1 - slowdown)
    rerun = bench(args, "--baseline", str(baseline), out=folder / "rerun.json")
    slowed = bench(args, "--baseline", str(baseline), "--inject-step-delay", f"{delay_ms:.4f}", out=folder / "slowed.json")
    batch = int(base_doc["key"]["per_replica_batch_size"]) // 2 or 1
    mismatch = bench(args, "--baseline", str(baseline), "--batch-size", str(batch), out=folder / "mismatch.json")
    row = {
        "baseline": f"{m['median']:,.0f}/s cv {m['steady_state']['cv'] * 100:.1f}% warm-up {m['steady_state']['dropped_windows']}",
        "rerun": rerun, "slowed": slowed, "mismatch": mismatch, "delay_ms": delay_ms,
        "seconds": base_s + rerun[2] + slowed[2] + mismatch[2],
    }
    row["passed"] = all(row[name][0] == code for name, code in EXPECTED.items())
    row["before"] = f"{gate_before(base_doc, rerun[1])}/{gate_before(base_doc, slowed[1])}"
    row["one_run"] = f"{one_run_exit(rerun[1])}/{one_run_exit(slowed[1])}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--model", default="dense", help="the smallest, fastest reference model by default")
    parser.add_argument("--steps", type=int, default=200, help="steps per window (long enough to average a tick)")
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--slowdown", type=float, default=0.25, help="throughput drop to inject (default 0.25)")
    parser.add_argument("--bursts", metavar="ON:OFF", default=None,
                        help="a neighbour that loads one core ON seconds in every ON+OFF (e.g. 2:4)")
    parser.add_argument("--keep", metavar="DIR", default=None, help="keep every round's documents under DIR")
    args = parser.parse_args()
    if not 0 < args.slowdown < 1:
        parser.error("--slowdown must be between 0 and 1")
    neighbour = start_bursts(args.bursts) if args.bursts else None
    try:
        run_rounds(args)
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()


def run_rounds(args: argparse.Namespace) -> None:
    load = f", neighbour {args.bursts}" if args.bursts else ""
    print(f"bench gate x{args.runs}: {args.model}, {args.repeats} windows of {args.steps} steps, "
          f"slowdown {args.slowdown:.0%}{load}")
    print(f"{'#':>2}  {'baseline':<34} {'rerun (want 0)':<36} {'slowed (want 1)':<40} {'key (2)':<7} {'s':>5}  ok"
          f"  before  1 run")
    passed = false_regressions = before_false_regressions = caught = before_caught = 0
    one_run_false = one_run_caught = 0
    for index in range(1, args.runs + 1):
        if args.keep:
            folder = Path(args.keep) / f"round-{index:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            row = one_round(args, folder)
        else:
            with tempfile.TemporaryDirectory(prefix="bench-gate-") as temporary:
                row = one_round(args, Path(temporary))
        if "rerun" not in row:
            print(f"{index:>2}  baseline failed: {row['baseline']}")
            continue
        passed += row["passed"]
        rerun, slowed, mismatch = row["rerun"], row["slowed"], row["mismatch"]
        false_regressions += rerun[0] == 1
        caught += slowed[0] == 1
        before_false_regressions += row["before"].startswith("1")
        before_caught += row["before"].endswith("1")
        one_run_false += row["one_run"].startswith("1")
        one_run_caught += row["one_run"].endswith("1")
        print(f"{index:>2}  {row['baseline']:<34} {rerun[0]}: {gate_words(rerun[1]):<33} "
              f"{slowed[0]}: {gate_words(slowed[1]):<37} {mismatch[0]:<7} {row['seconds']:>5.1f}  "
              f"{'yes' if row['passed'] else 'NO':<3} {row['before']:<7} {row['one_run']}", flush=True)
    print(f"passed {passed} of {args.runs}; false exit 1 on a rerun: {false_regressions} (the gate before: "
          f"{before_false_regressions}; on one run: {one_run_false}); slowdown caught: {caught} (before: "
          f"{before_caught}; on one run: {one_run_caught})")


if __name__ == "__main__":
    main()
