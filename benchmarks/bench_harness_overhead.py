"""Harness overhead: tpudoctor's reference-run loop against a bare Keras ``fit`` of the same model and data.

    .venv/bin/python benchmarks/bench_harness_overhead.py [--models dense,mlp] [--steps 25] [--windows 8] [--rounds 3]

Both sides run in this process on the default strategy, after their own compile and warm-up,
on the same synthetic data through the same ``tf.data`` pipeline (shuffle, repeat, batch,
prefetch). Throughput is examples over wall time for the same number of steps. Prints, per
model, the median over rounds of ``fit_examples_per_s / harness_examples_per_s - 1`` (the
overhead; negative means the harness is faster). Goal: under 3 %.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def harness_examples_per_s(model: str, steps: int, windows: int) -> float:
    from tpudoctor.reference_models.train import RunConfig, run

    result = run(RunConfig(model=model, steps_per_window=steps, windows=windows, accelerator="cpu"),
                 emit=lambda *a, **k: None)
    # Total examples over total timed seconds (sum of windows), like fit's wall clock below.
    seconds = sum(steps * result["global_batch_size"] / x for x in result["examples_per_s"])
    return steps * windows * result["global_batch_size"] / seconds


def fit_examples_per_s(model: str, steps: int, windows: int) -> float:
    import keras
    import tensorflow as tf

    from tpudoctor.reference_models import model_module
    from tpudoctor.reference_models.train import DATA_BATCHES, SEED

    spec = model_module(model)
    batch = spec.DEFAULT_PER_REPLICA_BATCH
    x, y = spec.make_data(batch * DATA_BATCHES, seed=SEED)
    dataset = (tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=SEED).repeat()
               .batch(batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE))
    net = spec.build_model()
    loss = spec.make_loss()
    loss = type(loss).from_config({**loss.get_config(), "reduction": "sum_over_batch_size"})
    net.compile(optimizer=keras.optimizers.Adam(spec.LEARNING_RATE), loss=loss, jit_compile=True)
    net.fit(dataset, steps_per_epoch=2 * steps, epochs=1, verbose=0, shuffle=False)  # compile + warm-up, as the harness does
    t0 = time.perf_counter()
    net.fit(dataset, steps_per_epoch=steps * windows, epochs=1, verbose=0, shuffle=False)
    return steps * windows * batch / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="dense,mlp,bert_tiny")
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{'model':<12}{'harness ex/s':>14}{'keras fit ex/s':>16}{'overhead':>10}")
    for model in args.models.split(","):
        overheads, ours, theirs = [], [], []
        for _ in range(args.rounds):  # alternate so drift on a shared machine hits both sides alike
            ours.append(harness_examples_per_s(model, args.steps, args.windows))
            theirs.append(fit_examples_per_s(model, args.steps, args.windows))
            overheads.append(theirs[-1] / ours[-1] - 1.0)
        print(f"{model:<12}{statistics.median(ours):>14,.0f}{statistics.median(theirs):>16,.0f}"
              f"{statistics.median(overheads) * 100:>9.1f}%")


if __name__ == "__main__":
    main()
