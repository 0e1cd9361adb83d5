"""``mlp``: a two-hidden-layer perceptron on synthetic 10-class data labelled by a random linear teacher."""

from __future__ import annotations

from typing import Any

import numpy as np

DESCRIPTION = "2x256 ReLU MLP, 10-class classification of 64 synthetic features"
DEFAULT_PER_REPLICA_BATCH = 128
LEARNING_RATE = 3e-3
FEATURES = 64
CLASSES = 10
HIDDEN = 256


def make_data(num_examples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(num_examples, FEATURES)).astype(np.float32)
    teacher = rng.normal(size=(FEATURES, CLASSES)).astype(np.float32)
    y = np.argmax(x @ teacher, axis=1).astype(np.int32)
    return x, y


def build_model() -> Any:
    import keras

    inputs = keras.Input(shape=(FEATURES,), name="x")
    h = keras.layers.Dense(HIDDEN, activation="relu", name="hidden_1")(inputs)
    h = keras.layers.Dense(HIDDEN, activation="relu", name="hidden_2")(h)
    outputs = keras.layers.Dense(CLASSES, name="logits")(h)
    return keras.Model(inputs, outputs, name="mlp")


def make_loss() -> Any:
    import keras

    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
