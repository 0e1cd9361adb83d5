"""The JAX reference run: same events, data and timing as ``train`` (TensorFlow), data-parallel over all chips.

The batch is sharded over a one-axis device mesh (every local TPU chip, or the CPU), the
parameters are replicated, and the whole step (forward, backward, Adam) is one ``jax.jit``.
Global batch = per-device batch x devices. Windows end with ``block_until_ready``.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from tpudoctor.reference_models import model_module, model_version, result_log
from tpudoctor.reference_models.device import cpu_model
from tpudoctor.reference_models.jax_models import JAX_MODELS, init_params, loss_fn
from tpudoctor.reference_models.measure import measure_run
from tpudoctor.reference_models.train import DATA_BATCHES, SEED, Emit, RunConfig
from tpudoctor.reference_models.versions import run_versions

ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-8


def run(config: RunConfig, emit: Emit = result_log.emit) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    if config.model not in JAX_MODELS:
        raise ValueError(f"the JAX variant has {', '.join(JAX_MODELS)}, not {config.model!r}")
    if config.data_dir:
        raise ValueError("--data-dir (TFRecord input) is TensorFlow only")
    spec = model_module(config.model)
    devices = jax.devices("cpu") if config.accelerator == "cpu" else jax.devices()
    if config.accelerator == "tpu" and devices[0].platform != "tpu":
        raise RuntimeError(f"asked for a TPU but JAX found {devices[0].platform} devices only")
    mesh = Mesh(np.array(devices), ("data",))
    batch_sharding = NamedSharding(mesh, PartitionSpec("data"))
    replicated = NamedSharding(mesh, PartitionSpec())
    per_device = config.per_replica_batch_size or spec.DEFAULT_PER_REPLICA_BATCH
    global_batch = per_device * len(devices)
    first = devices[0]
    kind = cpu_model() if first.platform == "cpu" else first.device_kind
    device = {
        "platform": first.platform.upper(), "device_kind": kind, "device_count": len(devices),
        "accelerator_type": os.environ.get("TPU_ACCELERATOR_TYPE") or f"{first.platform}:{kind}",
        "topology": os.environ.get("TPU_TOPOLOGY"), "host_count": jax.process_count(),
    }
    start = {
        "model": config.model, "model_version": model_version(config.model, framework="jax"),
        "description": spec.DESCRIPTION, "framework": "jax", "versions": run_versions("jax"), "device": device,
        "replicas": len(devices), "per_replica_batch_size": per_device, "global_batch_size": global_batch,
        "steps_per_window": config.steps_per_window, "windows": config.windows, "input": "in-memory",
    }
    emit(result_log.RUN_START, start)

    x, y = spec.make_data(global_batch * DATA_BATCHES, seed=SEED)
    learning_rate = config.learning_rate or spec.LEARNING_RATE
    params = jax.device_put(init_params(config.model, jax.random.PRNGKey(SEED)), replicated)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = (params, zeros, zeros, jnp.zeros((), jnp.int32))

    @jax.jit
    def train_step(state: Any, xb: Any, yb: Any) -> tuple[Any, Any]:
        params, m, v, t = state
        loss, grads = jax.value_and_grad(lambda p: loss_fn(config.model, p, xb, yb))(params)
        t = t + 1
        m = jax.tree_util.tree_map(lambda a, g: ADAM_B1 * a + (1 - ADAM_B1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda a, g: ADAM_B2 * a + (1 - ADAM_B2) * g * g, v, grads)
        step = learning_rate * jnp.sqrt(1 - ADAM_B2**t) / (1 - ADAM_B1**t)
        params = jax.tree_util.tree_map(lambda p, a, b: p - step * a / (jnp.sqrt(b) + ADAM_EPS), params, m, v)
        return (params, m, v, t), loss

    order = np.random.default_rng(SEED)
    batches = DATA_BATCHES

    def batch(i: int) -> tuple[Any, Any]:
        if i % batches == 0:
            batch.perm = order.permutation(len(x))  # type: ignore[attr-defined]
        idx = batch.perm[(i % batches) * global_batch:(i % batches + 1) * global_batch]  # type: ignore[attr-defined]
        return jax.device_put(x[idx], batch_sharding), jax.device_put(y[idx], batch_sharding)

    step_index = 0
    next_batch = batch(step_index)

    def step(state: Any) -> tuple[Any, Any]:
        nonlocal step_index, next_batch
        xb, yb = next_batch
        step_index += 1
        next_batch = batch(step_index)  # prefetch: the copy overlaps the step just dispatched
        return train_step(state, xb, yb)

    def run_steps(n: int) -> float:
        nonlocal state
        for _ in range(n):
            state, loss = step(state)
        return float(loss.block_until_ready())

    @contextlib.contextmanager
    def profiler(logdir: str):
        jax.profiler.start_trace(logdir)
        try:
            yield
        finally:
            jax.profiler.stop_trace()

    return measure_run(run_steps, start=start, steps_per_window=config.steps_per_window, windows=config.windows,
                       global_batch=global_batch, emit=emit, profile_dir=config.profile_dir, profiler=profiler,
                       step_delay_ms=config.step_delay_ms)
