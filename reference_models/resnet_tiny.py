"""``resnet_tiny``: a small residual convolutional network on synthetic 32x32 images.

Each class has a fixed random template; an image is its class template plus noise, so the
task is learnable in a few steps while the network still exercises convolutions, batch norm
and residual adds like a real ResNet.
"""

from __future__ import annotations

from typing import Any

import numpy as np

DESCRIPTION = "ResNet with 3 residual stages (16/32/64 channels), 10-class 32x32x3 synthetic images"
DEFAULT_PER_REPLICA_BATCH = 32
LEARNING_RATE = 2e-3
IMAGE_SIZE = 32
CLASSES = 10


def make_data(num_examples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    templates = rng.normal(size=(CLASSES, IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.float32)
    y = rng.integers(0, CLASSES, size=num_examples).astype(np.int32)
    noise = rng.normal(scale=1.0, size=(num_examples, IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.float32)
    return templates[y] + noise, y


def _residual_block(keras: Any, x: Any, channels: int, stride: int, name: str) -> Any:
    layers = keras.layers
    shortcut = x
    h = layers.Conv2D(channels, 3, strides=stride, padding="same", use_bias=False, name=f"{name}_conv1")(x)
    h = layers.BatchNormalization(name=f"{name}_bn1")(h)
    h = layers.ReLU(name=f"{name}_relu1")(h)
    h = layers.Conv2D(channels, 3, padding="same", use_bias=False, name=f"{name}_conv2")(h)
    h = layers.BatchNormalization(name=f"{name}_bn2")(h)
    if stride != 1 or shortcut.shape[-1] != channels:
        shortcut = layers.Conv2D(channels, 1, strides=stride, use_bias=False, name=f"{name}_proj")(shortcut)
        shortcut = layers.BatchNormalization(name=f"{name}_proj_bn")(shortcut)
    return layers.ReLU(name=f"{name}_out")(layers.Add(name=f"{name}_add")([h, shortcut]))


def build_model() -> Any:
    import keras

    inputs = keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3), name="x")
    h = keras.layers.Conv2D(16, 3, padding="same", use_bias=False, name="stem_conv")(inputs)
    h = keras.layers.BatchNormalization(name="stem_bn")(h)
    h = keras.layers.ReLU(name="stem_relu")(h)
    for i, (channels, stride) in enumerate(((16, 1), (32, 2), (64, 2))):
        h = _residual_block(keras, h, channels, stride, name=f"stage{i + 1}")
    h = keras.layers.GlobalAveragePooling2D(name="pool")(h)
    outputs = keras.layers.Dense(CLASSES, name="logits")(h)
    return keras.Model(inputs, outputs, name="resnet_tiny")


def make_loss() -> Any:
    import keras

    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
