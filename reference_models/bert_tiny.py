"""``bert_tiny``: a two-layer transformer encoder on synthetic token sequences.

Each class draws 30 % of its tokens from its own slice of the vocabulary, the rest uniformly,
so sequence classification is learnable while the model runs embeddings, multi-head
self-attention, layer norm and feed-forward blocks like BERT.
"""

from __future__ import annotations

from typing import Any

import numpy as np

DESCRIPTION = "2-layer transformer encoder (hidden 64, 4 heads), 4-class classification of 32-token sequences"
DEFAULT_PER_REPLICA_BATCH = 64
LEARNING_RATE = 2e-3
VOCAB = 512
SEQ_LEN = 32
CLASSES = 4
HIDDEN = 64
HEADS = 4
FFN = 128
LAYERS = 2
CLASS_TOKEN_SHARE = 0.3


def make_data(num_examples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, CLASSES, size=num_examples).astype(np.int32)
    tokens = rng.integers(0, VOCAB, size=(num_examples, SEQ_LEN))
    slice_size = VOCAB // CLASSES
    own = rng.integers(0, slice_size, size=(num_examples, SEQ_LEN)) + (y[:, None] * slice_size)
    use_own = rng.random(size=(num_examples, SEQ_LEN)) < CLASS_TOKEN_SHARE
    return np.where(use_own, own, tokens).astype(np.int32), y


def build_model() -> Any:
    import keras

    layers = keras.layers
    inputs = keras.Input(shape=(SEQ_LEN,), dtype="int32", name="x")
    h = layers.Embedding(VOCAB, HIDDEN, name="token_embedding")(inputs)
    positions = layers.Embedding(SEQ_LEN, HIDDEN, name="position_embedding")(keras.ops.arange(SEQ_LEN))
    h = h + positions
    for i in range(LAYERS):
        attn = layers.MultiHeadAttention(HEADS, HIDDEN // HEADS, name=f"layer{i}_attention")(h, h)
        h = layers.LayerNormalization(epsilon=1e-6, name=f"layer{i}_attention_norm")(h + attn)
        ffn = layers.Dense(FFN, activation="gelu", name=f"layer{i}_ffn_in")(h)
        ffn = layers.Dense(HIDDEN, name=f"layer{i}_ffn_out")(ffn)
        h = layers.LayerNormalization(epsilon=1e-6, name=f"layer{i}_ffn_norm")(h + ffn)
    pooled = layers.GlobalAveragePooling1D(name="pool")(h)
    outputs = layers.Dense(CLASSES, name="logits")(pooled)
    return keras.Model(inputs, outputs, name="bert_tiny")


def make_loss() -> Any:
    import keras

    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
