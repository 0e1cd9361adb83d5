"""A small data-parallel JAX training job on CPU: one process per simulated host, gloo collectives.

Started by ``tpudoctor.testing.hung_job.HungJob`` for the tests and benchmarks of ``tpudoctor hang``.
It is an ordinary training loop: a data loader that reads a shard file per step, a jitted step whose
loss and gradients are averaged over every process (an all-reduce), a metrics writer thread, and a
checkpoint every few steps, with MaxText-style absl log lines. Nothing in it knows about hangs; the
controller makes it hang from outside, as real jobs hang (see ``HungJob``).
"""

from __future__ import annotations

import argparse
import logging
import os
import time

from tpudoctor.testing.hung_job import checkpointing, input_pipeline, metrics

LEARNING_RATE = 0.05


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    log = _logger(args.log_file)
    import jax

    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(args.coordinator, num_processes=args.processes, process_id=args.process_id)
    log.info("process %d of %d started; devices %s", args.process_id, args.processes, jax.devices())
    step_fn, place, replicate = _compile(jax)
    folder = os.path.join(args.workdir, f"process-{args.process_id}")
    loader = input_pipeline.ShardReader(os.path.join(folder, "data"))
    writer = metrics.MetricsWriter(os.path.join(folder, "metrics.jsonl"))
    checkpointer = checkpointing.Checkpointer(os.path.join(args.workdir, "checkpoints"), args.process_id)
    import numpy as np

    params = {"w": replicate(np.eye(input_pipeline.FEATURES, dtype=np.float32) * 0.5),
              "b": replicate(np.zeros(input_pipeline.FEATURES, np.float32))}
    last = time.monotonic()
    for step in range(args.steps):
        values, passes = loader.next_batch(step)
        params, loss = train_step(step_fn, place, params, values, passes)
        writer.record(step, loss)
        if step % args.checkpoint_every == 0:
            checkpointer.save(step, params)
        now = time.monotonic()
        log.info("completed step: %d, seconds: %.3f, loss: %.4f", step, now - last, loss)
        last = now
        time.sleep(args.step_pause)


def train_step(step_fn, place, params, values, passes):
    params, loss = step_fn(params, *place(values, passes))
    return params, float(loss)


def _compile(jax):
    """The jitted step, how a process's batch becomes its shard of the global batch, and how the
    parameters are put on every device."""
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("data",))
    sharded = NamedSharding(mesh, P("data"))

    def refine(x, passes):  # per-batch preprocessing on the device: as many passes as the batch asks
        return lax.while_loop(lambda c: c[0] < passes[0], lambda c: (c[0] + 1, jnp.tanh(c[1] * 1.0001)),
                              (jnp.int32(0), x))[1]

    def loss_fn(params, x):
        return jnp.mean((x @ params["w"] + params["b"] - 1.0) ** 2)

    def local_step(params, x, passes):
        x = refine(x, passes)
        loss, grads = jax.value_and_grad(loss_fn)(params, x)
        loss, grads = lax.pmean((loss, grads), "data")  # the all-reduce every process waits in
        params = jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)
        return params, loss

    step_fn = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P("data"), P("data")),
                                    out_specs=(P(), P())))

    def place(values, passes):
        x = jax.make_array_from_process_local_data(sharded, values)
        p = jax.make_array_from_process_local_data(sharded, np.array([passes], np.int32))
        return x, p

    def replicate(value):
        return jax.make_array_from_process_local_data(NamedSharding(mesh, P()), value)

    return step_fn, place, replicate


def _logger(path: str) -> logging.Logger:
    from absl import logging as absl_logging

    handler = logging.FileHandler(path)
    handler.setFormatter(absl_logging.PythonFormatter())
    log = logging.getLogger("train")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    return log


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--process-id", type=int, required=True)
    parser.add_argument("--processes", type=int, required=True)
    parser.add_argument("--coordinator", required=True, metavar="HOST:PORT")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--log-file", required=True)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--checkpoint-every", type=int, default=5)
    parser.add_argument("--step-pause", type=float, default=0.1)
    return parser


if __name__ == "__main__":
    main()
