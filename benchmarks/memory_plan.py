"""Decode time and peak memory of the buffer plan of a large program: a JAX CPU capture of a deep MLP's train step
(grad + SGD update, the layers unrolled in Python so the HLO has thousands of instructions).

    .venv/bin/python benchmarks/memory_plan.py                    # 48 layers
    .venv/bin/python benchmarks/memory_plan.py --layers 96 --repeat 5

The capture is made in one subprocess (JAX); the plan is read in another that never imports JAX, so its peak RSS
(VmHWM, Linux) is tpudoctor's own: decoding every program's ``Hlo Proto`` on the ``/host:metadata`` plane
(``plans_from_xspace``), attributing the largest plan's peak and running every memory rule on it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MAKE = """
import glob, json, sys
import jax, jax.numpy as jnp
layers, width, batch, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def loss(params, x):
    for w, b in params:
        x = jax.nn.gelu(x @ w + b)
    return jnp.mean(x ** 2)
def step(params, x):
    grads = jax.grad(loss)(params, x)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)
params = [(jnp.ones((width, width)) * 0.01, jnp.zeros((width,))) for _ in range(layers)]
x = jnp.ones((batch, width))
compiled = jax.jit(step).lower(params, x).compile()
jax.block_until_ready(compiled(params, x))
jax.profiler.start_trace(out)
jax.block_until_ready(compiled(params, x))
jax.profiler.stop_trace()
m = compiled.memory_analysis()
print(json.dumps({"xplane": glob.glob(f"{out}/**/*.xplane.pb", recursive=True)[0],
                  "memory_analysis_bytes": m.argument_size_in_bytes + m.output_size_in_bytes
                  + m.temp_size_in_bytes - m.alias_size_in_bytes}))
"""

READ = """
import json, sys, time
def peak_rss_bytes():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
from tpudoctor.memory.plan_capture import largest_plan, plans_from_xspace
from tpudoctor.memory.fix_rule import MemoryPlanInput
from tpudoctor.families import load_rules
from tpudoctor.memory.fix_rule import rank_fixes

rules = load_rules("memory-rules", plugins=False)
base = peak_rss_bytes()
decode, attribute, judge = [], [], []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); plans = plans_from_xspace(sys.argv[1]); decode.append(time.perf_counter() - t)
    plan = largest_plan(plans)
    t = time.perf_counter(); subject = MemoryPlanInput(plan); attribute.append(time.perf_counter() - t)
    t = time.perf_counter(); fixes = rank_fixes(subject, rules); judge.append(time.perf_counter() - t)
print(json.dumps({
    "programs": len(plans), "largest": plan.event_name, "peak_bytes": plan.peak_bytes,
    "instructions": len(plan.instructions), "buffers": len(plan.buffers),
    "heap_events": sum(p.events for p in plan.heap_peaks.values()),
    "named_fraction": subject.attribution.named_fraction, "buckets": {k: v for k, v in
                                                                     subject.attribution.buckets.items() if v},
    "top_fix": fixes[0].id if fixes else None,
    "decode_s": min(decode), "attribute_s": min(attribute), "rules_s": min(judge),
    "rss_before_bytes": base, "peak_rss_bytes": peak_rss_bytes()}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=48)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3, help="reads of the plan (the fastest is reported)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        made = subprocess.run([sys.executable, "-c", MAKE, str(args.layers), str(args.width), str(args.batch),
                               str(Path(folder) / "trace")], capture_output=True, text=True, check=True)
        capture = json.loads(made.stdout.strip().splitlines()[-1])
        xplane = Path(capture["xplane"])
        read = subprocess.run([sys.executable, "-c", READ, str(xplane), str(args.repeat)], capture_output=True,
                              text=True, check=True, cwd=REPO)
        result = json.loads(read.stdout.strip().splitlines()[-1])
        result["capture_bytes"] = xplane.stat().st_size
    result["memory_analysis_bytes"] = capture["memory_analysis_bytes"]
    mib = 1 << 20
    print(f"{args.layers}-layer MLP train step (width {args.width}, batch {args.batch}): capture "
          f"{result['capture_bytes'] / mib:.2f} MiB, {result['programs']} programs")
    print(f"  largest {result['largest']}: {result['instructions']:,} instructions, {result['buffers']:,} logical "
          f"buffers, {result['heap_events']:,} heap events; peak {result['peak_bytes'] / mib:.1f} MiB "
          f"(memory_analysis {result['memory_analysis_bytes'] / mib:.1f} MiB + constants)")
    print(f"  decode (every program's plan) {result['decode_s'] * 1e3:.0f} ms, attribution "
          f"{result['attribute_s'] * 1e3:.0f} ms, rules {result['rules_s'] * 1e3:.0f} ms (best of {args.repeat})")
    print(f"  peak RSS {result['peak_rss_bytes'] / mib:.0f} MiB (after imports {result['rss_before_bytes'] / mib:.0f}"
          f" MiB: +{(result['peak_rss_bytes'] - result['rss_before_bytes']) / mib:.0f} MiB)")
    print(f"  attribution: {result['named_fraction'] * 100:.2f}% named; "
          + ", ".join(f"{k} {v / mib:.1f} MiB" for k, v in result["buckets"].items())
          + f"; top fix {result['top_fix']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
