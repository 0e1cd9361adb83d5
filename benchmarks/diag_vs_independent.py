"""diag's throughput and bandwidth figures against independent measures on this machine: a plain JAX timing loop
(``timeit`` of jitted calls on one device, no diag harness: no shuffled order, no fault stretch, no chain) and
NumPy (OpenBLAS matmul, ``np.copyto`` of the same bytes). Prints each figure, the independent one and the
difference.

    python benchmarks/diag_vs_independent.py [--cpu-devices 8] [--rounds 6]

Rounds alternate diag's measurement and the independent ones, and the comparison is the median over rounds of
each round's ratio: this VM's speed drifts by 10 % and more over a minute, which a before-and-after comparison
would read as a difference. The issue's bar: within 5 % of the independent measure. The plain JAX loop is the
like-for-like one (same compiler, same device); NumPy says what the host itself can do.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import timeit


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu-devices", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each measure in a round")
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.cpu_devices}"
    import jax
    import jax.numpy as jnp
    import numpy as np

    from tpudoctor.diag import measure
    from tpudoctor.diag.faults import FaultPlan
    from tpudoctor.diag.levels import sizes_for

    sizes = dataclasses.replace(sizes_for(jax.default_backend()), reps=args.reps, hbm_reps=args.reps)
    n, chain, count = sizes.matmul_n, sizes.matmul_chain, sizes.hbm_bytes // 4
    dtype = jnp.float32 if jax.default_backend() == "cpu" else jnp.bfloat16
    device = jax.local_devices()[0]
    a = jax.device_put(jnp.asarray(np.random.default_rng(1).standard_normal((n, n)), dtype), device)
    one = jax.jit(jnp.matmul)
    x = jax.device_put(jnp.zeros((count,), jnp.float32), device)
    scale = jax.jit(lambda v: v * 1.000001 + 1.0)
    host_a = np.asarray(np.random.default_rng(1).standard_normal((n, n)), np.float32)
    src, dst = np.ones(count, np.float32), np.empty(count, np.float32)
    one(a, a).block_until_ready()
    scale(x).block_until_ready()

    def median_s(fn, number=1):
        return statistics.median(timeit.repeat(fn, number=number, repeat=args.reps)) / number

    flops, moved = 2.0 * n ** 3 * chain, 2.0 * count * 4
    rows = {key: [] for key in ("diag_mm0", "diag_mm", "jax_mm", "np_mm", "diag_bw0", "diag_bw", "jax_bw", "np_bw")}
    for _ in range(args.rounds):
        mm = measure.matmul_throughput(sizes, FaultPlan()).frame.groupby("device")["tflops"].median()
        rows["diag_mm0"].append(float(mm.iloc[0]))
        rows["diag_mm"].append(float(mm.median()))
        rows["jax_mm"].append(flops / median_s(lambda: [one(a, a) for _ in range(chain)][-1].block_until_ready())
                              / 1e12)
        rows["np_mm"].append(flops / (chain * median_s(lambda: host_a @ host_a, number=chain)) / 1e12)
        bw = measure.hbm_bandwidth(sizes, FaultPlan()).frame.groupby("device")["gbps"].median()
        rows["diag_bw0"].append(float(bw.iloc[0]))
        rows["diag_bw"].append(float(bw.median()))
        rows["jax_bw"].append(moved / median_s(lambda: scale(x).block_until_ready()) / 1e9)
        rows["np_bw"].append(moved / median_s(lambda: np.copyto(dst, src)) / 1e9)

    def line(what, ours, theirs, name):
        ratio = statistics.median(o / t for o, t in zip(rows[ours], rows[theirs], strict=True))
        print(f"  {what}: diag {statistics.median(rows[ours]):.4g}, {name} {statistics.median(rows[theirs]):.4g} "
              f"(round by round {100 * (ratio - 1):+.1f} %)")

    print(f"backend {jax.default_backend()}, {len(jax.local_devices())} devices, {args.rounds} alternating rounds; "
          f"matmul {chain} x {n}^3 {jnp.dtype(dtype).name}, bandwidth on {count * 4 / 2**30:.2f} GiB")
    line("matmul TFLOP/s, device 0", "diag_mm0", "jax_mm", "plain JAX loop on device 0")
    line("matmul TFLOP/s, device median", "diag_mm", "jax_mm", "plain JAX loop")
    line("matmul TFLOP/s, device median", "diag_mm", "np_mm", "NumPy")
    line("bandwidth GB/s, device 0", "diag_bw0", "jax_bw", "plain JAX loop on device 0")
    line("bandwidth GB/s, device median", "diag_bw", "jax_bw", "plain JAX loop")
    line("bandwidth GB/s, device median", "diag_bw", "np_bw", "NumPy copyto")
    return 0


if __name__ == "__main__":
    sys.exit(main())
