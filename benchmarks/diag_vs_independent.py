"""diag's throughput and bandwidth figures against independent measures on this machine: a plain JAX timing loop
(``timeit`` of one jitted call, no diag harness: no chain rotation, no fault stretch) and NumPy (OpenBLAS matmul,
``np.copyto`` for a read + write of the same bytes). Prints each figure, the independent one and the difference.

    python benchmarks/diag_vs_independent.py [--cpu-devices 8] [--reps 12]

The issue's bar: within 5 % of the independent measure. The plain JAX loop is the like-for-like one (same
compiler, same device); NumPy is a second opinion that also shows what the host itself can do.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu-devices", type=int, default=8)
    parser.add_argument("--reps", type=int, default=12)
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.cpu_devices}"
    import jax
    import jax.numpy as jnp
    import numpy as np

    from tpudoctor.diag import measure
    from tpudoctor.diag.faults import FaultPlan
    from tpudoctor.diag.levels import sizes_for

    sizes = sizes_for(jax.default_backend(), reps=args.reps)
    n, chain = sizes.matmul_n, sizes.matmul_chain
    dtype = jnp.float32 if jax.default_backend() == "cpu" else jnp.bfloat16
    diag_mm = measure.matmul_throughput(sizes, FaultPlan()).frame.groupby("device")["tflops"].median()
    diag_bw = measure.hbm_bandwidth(sizes, FaultPlan()).frame.groupby("device")["gbps"].median()

    # a plain JAX loop: one n x n matmul jitted on device 0, timed `chain` calls at a time
    device = jax.local_devices()[0]
    a = jax.device_put(jnp.asarray(np.random.default_rng(1).standard_normal((n, n)), dtype), device)
    one = jax.jit(jnp.matmul)
    one(a, a).block_until_ready()
    loop_s = timeit.repeat(lambda: [one(a, a) for _ in range(chain)][-1].block_until_ready(),
                           number=1, repeat=args.reps)
    jax_tflops = 2.0 * n ** 3 * chain / statistics.median(loop_s) / 1e12
    count = sizes.hbm_bytes // 4
    x = jax.device_put(jnp.zeros((count,), jnp.float32), device)
    scale = jax.jit(lambda v: v * 1.000001 + 1.0)
    scale(x).block_until_ready()
    bw_s = timeit.repeat(lambda: scale(x).block_until_ready(), number=1, repeat=max(args.reps // 3, 3))
    jax_gbps = 2.0 * count * 4 / statistics.median(bw_s) / 1e9

    host_a = np.asarray(np.random.default_rng(1).standard_normal((n, n)), np.float32)
    np_s = timeit.repeat(lambda: host_a @ host_a, number=chain, repeat=args.reps)
    np_tflops = 2.0 * n ** 3 * chain / statistics.median(np_s) / 1e12
    src, dst = np.ones(count, np.float32), np.empty(count, np.float32)
    copy_s = timeit.repeat(lambda: np.copyto(dst, src), number=1, repeat=max(args.reps // 3, 3))
    np_gbps = 2.0 * count * 4 / statistics.median(copy_s) / 1e9

    def line(what, ours, theirs, name):
        print(f"  {what}: diag {ours:.4g}, {name} {theirs:.4g} ({100 * (ours - theirs) / theirs:+.1f} %)")

    print(f"backend {jax.default_backend()}, {len(jax.local_devices())} devices; matmul {chain} x {n}^3 "
          f"{jnp.dtype(dtype).name}, bandwidth on {count * 4 / 2**30:.2f} GiB")
    print(f"diag per device: matmul TFLOP/s median {diag_mm.median():.4g} (spread {diag_mm.min():.4g}.."
          f"{diag_mm.max():.4g}); bandwidth GB/s median {diag_bw.median():.4g} "
          f"(spread {diag_bw.min():.4g}..{diag_bw.max():.4g})")
    line("matmul TFLOP/s, device 0", float(diag_mm.iloc[0]), jax_tflops, "plain JAX loop")
    line("matmul TFLOP/s, device median", float(diag_mm.median()), jax_tflops, "plain JAX loop")
    line("matmul TFLOP/s, device median", float(diag_mm.median()), np_tflops, "NumPy")
    line("bandwidth GB/s, device 0", float(diag_bw.iloc[0]), jax_gbps, "plain JAX loop")
    line("bandwidth GB/s, device median", float(diag_bw.median()), jax_gbps, "plain JAX loop")
    line("bandwidth GB/s, device median", float(diag_bw.median()), np_gbps, "NumPy copyto")
    return 0


if __name__ == "__main__":
    sys.exit(main())
