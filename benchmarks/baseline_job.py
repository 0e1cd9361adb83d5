"""A small real JAX training job (an MLP on CPU) for the baseline-diff pairs: run it as is for the good run, or
with ``--fail KIND`` for a failing run of the same job (benchmarks/make_baseline_pairs.py)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

FAILURES = ("shape", "nan", "checkpoint", "config", "assert", "zero", "type", "memory", "exit", "dtype", "index",
            "warning_then_error")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail", choices=FAILURES)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--workdir", default="/tmp/baseline_job")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    import jax
    import jax.numpy as jnp

    if args.fail == "nan":
        jax.config.update("jax_debug_nans", True)
    log.info("jax %s, devices %s", jax.__version__, jax.devices())
    config = {"hidden": 64, "lr": 0.01, "batch": 32}
    log.info("config %s", json.dumps(config))
    if args.fail == "config":
        config.pop("lr")
    os.makedirs(args.workdir, exist_ok=True)
    key = jax.random.PRNGKey(int(time.time()) % 1000)
    k1, k2 = jax.random.split(key)
    params = {"w1": jax.random.normal(k1, (16, config["hidden"])) * 0.1,
              "w2": jax.random.normal(k2, (config["hidden"], 1)) * 0.1}

    def loss_fn(p, x, y):
        h = jnp.tanh(x @ p["w1"])
        return jnp.mean((h @ p["w2"] - y) ** 2)

    @jax.jit
    def step(p, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, g: a - config["lr"] * g, p, grads), loss

    fail_at = args.steps // 2
    for i in range(args.steps):
        x = jax.random.normal(jax.random.PRNGKey(i), (config["batch"], 16))
        y = jnp.sum(x, axis=1, keepdims=True)
        if i == fail_at and args.fail == "shape":
            x = jnp.ones((config["batch"], 17))
        if i == fail_at and args.fail == "nan":
            x = x * jnp.nan
        if i == fail_at and args.fail == "dtype":
            x = x.astype(jnp.int32) + "a"  # noqa
        params, loss = step(params, x, y)
        log.info("step %d loss %.4f", i, float(loss))
        if i == fail_at and args.fail == "checkpoint":
            open(os.path.join(args.workdir, "missing", "ckpt_%d.npz" % i), "rb")  # noqa: UP031, SIM115
        if i == fail_at and args.fail == "assert":
            assert float(loss) < 0, f"loss went positive at step {i}"
        if i == fail_at and args.fail == "zero":
            print(1 / (i - fail_at))
        if i == fail_at and args.fail == "type":
            log.info("lr %s", config["lr"] + "x")
        if i == fail_at and args.fail == "memory":
            raise MemoryError("could not allocate batch buffer of 17179869184 bytes")
        if i == fail_at and args.fail == "exit":
            log.error("data loader worker 3 died unexpectedly, stopping")
            return 3
        if i == fail_at and args.fail == "index":
            print(["a", "b"][i])
        if i == fail_at and args.fail == "warning_then_error":
            log.warning("gradient norm %.1f is large", 1e6)
            raise RuntimeError("gradient exploded: norm inf at step %d" % i)  # noqa: UP031
        if i % 4 == 0:
            log.info("saving checkpoint to %s/ckpt_%d", args.workdir, i)
    log.info("training finished after %d steps", args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
