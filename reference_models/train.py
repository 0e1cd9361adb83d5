"""One reference run: build, compile (first step, timed apart), then timed windows of steady steps.

Written the way Cloud TPU code must be written: the model and optimizer are created inside
the strategy's scope, the per-replica step runs under ``strategy.run`` and is XLA-compiled
(``jit_compile=True`` off TPU; TPUStrategy compiles every replicated function with XLA anyway),
the global batch is the per-replica batch times the replicas, and input comes from a
``tf.data`` pipeline with prefetch. Each window ends with a host sync on its last loss, so the
window time covers device work, not just dispatch. The first step (trace and
XLA compile) and one warm-up window are timed apart and never enter the throughput samples.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

from tpudoctor.reference_models import model_module, model_version, result_log
from tpudoctor.reference_models.device import make_strategy
from tpudoctor.reference_models.measure import measure_run
from tpudoctor.reference_models.versions import run_versions

# The generated data set holds this many global batches; the pipeline repeats over it.
DATA_BATCHES = 16
SEED = 0


@dataclasses.dataclass
class RunConfig:
    model: str
    steps_per_window: int = 20
    windows: int = 8
    per_replica_batch_size: int | None = None
    accelerator: str = "auto"
    data_dir: str | None = None
    profile_dir: str | None = None
    learning_rate: float | None = None
    step_delay_ms: float = 0.0
    """Host sleep added to every timed step: a known slowdown, for testing a throughput gate."""


Emit = Callable[..., None]


def run(config: RunConfig, emit: Emit = result_log.emit) -> dict[str, Any]:
    """Train ``config.model`` and return the run result (also emitted as ``run_result``)."""
    import tensorflow as tf

    spec = model_module(config.model)
    strategy, device = make_strategy(config.accelerator)
    replicas = int(strategy.num_replicas_in_sync)
    per_replica = config.per_replica_batch_size or spec.DEFAULT_PER_REPLICA_BATCH
    global_batch = per_replica * replicas
    start = {
        "model": config.model,
        "model_version": model_version(config.model),
        "description": spec.DESCRIPTION,
        "framework": "tensorflow",
        "versions": run_versions("tensorflow"),
        "device": device,
        "replicas": replicas,
        "per_replica_batch_size": per_replica,
        "global_batch_size": global_batch,
        "steps_per_window": config.steps_per_window,
        "windows": config.windows,
        "input": "tfrecord" if config.data_dir else "in-memory",
    }
    emit(result_log.RUN_START, start)

    x, y = spec.make_data(global_batch * DATA_BATCHES, seed=SEED)
    dataset = _dataset(tf, spec, config, x, y, global_batch)
    iterator = iter(strategy.experimental_distribute_dataset(dataset))

    with strategy.scope():
        model = spec.build_model()
        optimizer = _optimizer(config.learning_rate or spec.LEARNING_RATE)
        optimizer.build(model.trainable_variables)
    loss_object = spec.make_loss()
    on_tpu = device["platform"] == "TPU"

    def replica_step(features: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            predictions = model(features, training=True)
            per_example = loss_object(labels, predictions)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    # The iterator's get_next cannot live inside an XLA cluster, so only the replica step is jit-compiled.
    compiled_step = replica_step if on_tpu else tf.function(replica_step, jit_compile=True)

    @tf.function
    def train_step(it: Any) -> Any:
        features, labels = next(it)
        per_replica_loss = strategy.run(compiled_step, args=(features, labels))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)

    def run_steps(n: int) -> float:
        for _ in range(n):
            loss = train_step(iterator)
        return float(loss.numpy())  # host sync: the steps' device work is finished

    @contextlib.contextmanager
    def profiler(logdir: str):
        tf.profiler.experimental.start(logdir)
        try:
            yield
        finally:
            tf.profiler.experimental.stop()

    return measure_run(run_steps, start=start, steps_per_window=config.steps_per_window, windows=config.windows,
                       global_batch=global_batch, emit=emit, profile_dir=config.profile_dir, profiler=profiler,
                       step_delay_ms=config.step_delay_ms)


def _optimizer(learning_rate: float) -> Any:
    import keras

    return keras.optimizers.Adam(learning_rate=learning_rate)


def _dataset(tf: Any, spec: Any, config: RunConfig, x: Any, y: Any, global_batch: int) -> Any:
    if config.data_dir:
        from tpudoctor.reference_models.synthetic import tfrecord_dataset, write_tfrecords

        paths = write_tfrecords(x, y, config.data_dir, prefix=f"tpudoctor-{config.model}")
        dataset = tfrecord_dataset(paths, x, y).cache()
    else:
        dataset = tf.data.Dataset.from_tensor_slices((x, y))
    dataset = dataset.shuffle(len(x), seed=SEED, reshuffle_each_iteration=True).repeat()
    return dataset.batch(global_batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
