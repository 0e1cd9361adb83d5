"""The diag detectors on eight virtual CPU devices: one full-size r2 timed, then N clean runs (no chip may be
flagged), N with a chip made 10 % slower (it must be flagged), N with a bit flipped (it must be caught), and a
mid-soak slowdown judged by the soak rule and by a peak-only rule. Prints the figures.

    python benchmarks/diag_accuracy.py [--runs 20] [--reps N] [--offset K] [--bursts ON:OFF]

Held-out sets (``--offset``: which chips each run slows and flips), each named before the change it judged, and
never run before it: 5 (the margin at three times the spread), 6 (FAIL only beyond the chip's own noise), 7
(frozen 2026-12-02 18:55 UTC, before the second look at an unclear run).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from neighbour import start_bursts  # benchmarks/ is the script's own folder, first on sys.path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")


def full_r2_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tpudoctor", "diag", "-r", "2", "--cpu-devices", "8", "--format", "json",
                    "-o", os.devnull], check=False, capture_output=True, timeout=900)
    return time.perf_counter() - started


def flagged_alone(table, device: int) -> bool:
    """The slowed device is flagged and no other is."""
    return bool(table.loc[device, "slow"]) and int(table["slow"].sum()) == 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--reps", type=int, default=None, help="repetitions per timed test (default: r2's)")
    parser.add_argument("--skip-full", action="store_true")
    parser.add_argument("--skip-soak", action="store_true")
    parser.add_argument("--offset", type=int, default=0,
                        help="shift which device each run slows or flips (a second set of runs: another offset)")
    parser.add_argument("--bursts", metavar="ON:OFF", default=None,
                        help="a neighbour that loads one core ON seconds in every ON+OFF (e.g. 20:40)")
    args = parser.parse_args()
    neighbour = start_bursts(args.bursts) if args.bursts else None
    try:
        run_all(args)
    finally:
        if neighbour is not None:
            neighbour.kill()


def run_all(args: argparse.Namespace) -> None:
    if not args.skip_full:
        print(f"full-size r2 on 8 CPU devices (tpudoctor diag -r 2, whole command): {full_r2_seconds():.1f} s")

    from tpudoctor.diag import measure, second_look, stats
    from tpudoctor.diag.faults import FaultPlan
    from tpudoctor.diag.levels import sizes_for
    from tpudoctor.diag.rule import DiagInput
    from tpudoctor.diag.rules.soak_slowdown import SoakSlowdown
    from tpudoctor.rule import evaluate_rule

    sizes = sizes_for("cpu", reps=args.reps)
    clean_flags = clean_fails = slow_caught = slow_failed = flips_caught = 0
    slowness = []
    second_looks = {"clean": 0, "slow": 0}
    first_only = {"clean_flags": 0, "slow_alone": 0, "slow_sure": 0}  # the verdict had no second look been taken

    def looked(take, slow_device=None):
        """As r2 judges: an unclear first look is taken again (r2's budget allows the matmul's second look)."""
        first = take()
        table = stats.compare_peers(first.frame, "tflops")
        if slow_device is None:
            first_only["clean_flags"] += int(table["slow"].sum())
        elif flagged_alone(table, slow_device):
            first_only["slow_alone"] += 1
            first_only["slow_sure"] += bool(table.loc[slow_device, "sure"])
        timings = second_look.settle(first, take)
        if timings.looks:
            print(f"  second look: first {timings.looks[0]['unclear']}; judged on {timings.judged_on}")
        return timings

    started = time.perf_counter()
    for run in range(args.runs):
        clean_timings = looked(lambda: measure.matmul_throughput(sizes, FaultPlan()))
        clean = stats.compare_peers(clean_timings.frame, "tflops")
        second_looks["clean"] += bool(clean_timings.looks)
        clean_flags += int(clean["slow"].sum())
        clean_fails += int(clean["sure"].sum())
        device = (run + args.offset) % 8
        slow_timings = looked(lambda device=device: measure.matmul_throughput(
            sizes, FaultPlan.parse([f"slow:{device}:0.10"])), slow_device=device)
        slow = stats.compare_peers(slow_timings.frame, "tflops")
        second_looks["slow"] += bool(slow_timings.looks)
        alone = flagged_alone(slow, device)
        slow_caught += alone
        slow_failed += alone and bool(slow.loc[device, "sure"])
        if not alone:
            print(f"  run {run}: chip {device} at {slow.loc[device, 'slowness']:.3f}, margin "
                  f"{slow['margin'].iloc[0]:.3f}, flagged {sorted(slow.index[slow['slow'].astype(bool)].tolist())}")
        if clean["slow"].any():
            print(f"  run {run}: clean run flagged {sorted(clean.index[clean['slow'].astype(bool)].tolist())} "
                  f"(margin {clean['margin'].iloc[0]:.3f})")
        slowness.append(float(slow.loc[device, "slowness"]))
        flipped = (run + 3 + args.offset) % 8
        gemm = measure.gemm_check(sizes, FaultPlan.parse([f"bitflip:{flipped}"]))
        flips_caught += int(gemm.digests.value_counts().iloc[-1] == 1 and
                            gemm.digests[flipped] != gemm.digests.value_counts().index[0])
    per_run = (time.perf_counter() - started) / args.runs
    print(f"{args.runs} clean runs: {clean_flags} chip(s) flagged, {clean_fails} of them sure (a FAIL; else a WARN)")
    print(f"{args.runs} runs with a chip 10% slower: flagged alone {slow_caught}/{args.runs}, sure {slow_failed} "
          f"(measured slowness min {min(slowness):.3f}, median {sorted(slowness)[len(slowness) // 2]:.3f})")
    print(f"second looks taken: {second_looks['clean']} of the clean runs, {second_looks['slow']} of the slow ones")
    print(f"the first look alone would have said: clean {first_only['clean_flags']} chip(s) flagged; slow chip "
          f"flagged alone {first_only['slow_alone']}/{args.runs}, sure {first_only['slow_sure']}")
    print(f"{args.runs} runs with a bit flipped: caught {flips_caught}/{args.runs}")
    print(f"({per_run:.1f} s per round of the three, {sizes.reps} repetitions per timed test, "
          f"{sizes.matmul_chain} x {sizes.matmul_n}^3 matmuls per run)")

    if args.skip_soak:
        return
    soak = measure.matmul_throughput(sizes, FaultPlan.parse(["slowdown:2:0.20@0.5"]), soak_s=60.0)
    inventory = measure.inventory()
    subject = DiagInput(level=3, host="bench", inventory=inventory, soak=soak)
    finding = evaluate_rule(SoakSlowdown, subject)
    best = soak.frame.groupby("device")["tflops"].max()
    peak_only_flags = bool(best[2] < 0.95 * best.drop(2).median())
    print(f"mid-soak slowdown (chip 2, 20% from half-way, 60 s soak): soak rule {finding.status.value} "
          f"({finding.message}); peak-only rule (best run within 5% of peers) "
          f"{'FAIL' if peak_only_flags else 'PASS'}")


if __name__ == "__main__":
    main()
