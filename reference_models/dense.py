"""``dense``: one dense layer on a small synthetic regression problem (the guide's smoke model).

If this does not train, the fault is in the platform (device, runtime, input path), not in a model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

DESCRIPTION = "one Dense layer, linear regression on 16 synthetic features"
DEFAULT_PER_REPLICA_BATCH = 128
LEARNING_RATE = 0.05
FEATURES = 16


def make_data(num_examples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(num_examples, FEATURES)).astype(np.float32)
    weights = rng.normal(size=(FEATURES, 1)).astype(np.float32)
    y = (x @ weights + 0.5 + 0.01 * rng.normal(size=(num_examples, 1))).astype(np.float32)
    return x, y


def build_model() -> Any:
    import keras

    inputs = keras.Input(shape=(FEATURES,), name="x")
    outputs = keras.layers.Dense(1, name="dense")(inputs)
    return keras.Model(inputs, outputs, name="dense")


def make_loss() -> Any:
    import keras

    return keras.losses.MeanSquaredError(reduction=None)
