"""JAX versions of the reference models: plain functions over a parameter pytree, no extra libraries.

They train on the same synthetic data as the Keras models (``make_data`` of the model module) and
mirror their architectures: ``resnet_tiny`` (convolutions, batch norm over the batch, as Keras
trains, and residual adds) and ``bert_tiny`` (embeddings, multi-head self-attention, layer norm,
GELU feed-forward). Initialisation follows fan-in scaling rather than Keras' exact defaults.
"""

from __future__ import annotations

from typing import Any

JAX_MODELS = ("dense", "mlp", "resnet_tiny", "bert_tiny")
NORM_EPS = 1e-6
BATCH_NORM_EPS = 1e-3  # Keras BatchNormalization's default


def init_params(name: str, key: Any) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    from tpudoctor.reference_models import model_module

    spec = model_module(name)

    def layer(k: Any, fan_in: int, fan_out: int) -> dict[str, Any]:
        scale = jnp.sqrt(2.0 / fan_in) if name == "mlp" else jnp.sqrt(1.0 / fan_in)
        return {"w": jax.random.normal(k, (fan_in, fan_out), jnp.float32) * scale,
                "b": jnp.zeros((fan_out,), jnp.float32)}

    if name == "dense":
        return {"dense": layer(key, spec.FEATURES, 1)}
    if name == "resnet_tiny":
        return _resnet_params(spec, key, layer)
    if name == "bert_tiny":
        return _bert_params(spec, key, layer)
    k1, k2, k3 = jax.random.split(key, 3)
    return {"hidden_1": layer(k1, spec.FEATURES, spec.HIDDEN), "hidden_2": layer(k2, spec.HIDDEN, spec.HIDDEN),
            "logits": layer(k3, spec.HIDDEN, spec.CLASSES)}


def loss_fn(name: str, params: dict[str, Any], x: Any, y: Any) -> Any:
    import jax
    import jax.numpy as jnp

    if name == "dense":
        prediction = x @ params["dense"]["w"] + params["dense"]["b"]
        return jnp.mean((prediction - y) ** 2)
    if name in ("resnet_tiny", "bert_tiny"):
        logits = _resnet_logits(params, x) if name == "resnet_tiny" else _bert_logits(params, x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))
    h = jax.nn.relu(x @ params["hidden_1"]["w"] + params["hidden_1"]["b"])
    h = jax.nn.relu(h @ params["hidden_2"]["w"] + params["hidden_2"]["b"])
    logits = h @ params["logits"]["w"] + params["logits"]["b"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


RESNET_STAGES = ((16, 1), (32, 2), (64, 2))  # (channels, stride) of each residual block, as the Keras model


def _conv(key: Any, size: int, fan_in: int, fan_out: int) -> Any:
    import jax
    import jax.numpy as jnp

    return jax.random.normal(key, (size, size, fan_in, fan_out), jnp.float32) * jnp.sqrt(2.0 / (size * size * fan_in))


def _norm(channels: int) -> dict[str, Any]:
    import jax.numpy as jnp

    return {"scale": jnp.ones((channels,), jnp.float32), "bias": jnp.zeros((channels,), jnp.float32)}


def _resnet_params(spec: Any, key: Any, layer: Any) -> dict[str, Any]:
    import jax

    keys = iter(jax.random.split(key, 4 + 3 * len(RESNET_STAGES)))
    params: dict[str, Any] = {"stem": {"conv": _conv(next(keys), 3, 3, 16), "bn": _norm(16)}}
    channels_in = 16
    for i, (channels, stride) in enumerate(RESNET_STAGES):
        block = {"conv1": _conv(next(keys), 3, channels_in, channels), "bn1": _norm(channels),
                 "conv2": _conv(next(keys), 3, channels, channels), "bn2": _norm(channels)}
        proj_key = next(keys)
        if stride != 1 or channels_in != channels:
            block["proj"] = _conv(proj_key, 1, channels_in, channels)
            block["proj_bn"] = _norm(channels)
        params[f"stage{i + 1}"] = block
        channels_in = channels
    params["logits"] = layer(next(keys), channels_in, spec.CLASSES)
    return params


def _batch_norm(x: Any, norm: dict[str, Any]) -> Any:
    """Normalise over batch and space with the batch's own statistics (training mode)."""
    import jax.numpy as jnp

    mean = jnp.mean(x, axis=(0, 1, 2))
    var = jnp.var(x, axis=(0, 1, 2))
    return (x - mean) / jnp.sqrt(var + BATCH_NORM_EPS) * norm["scale"] + norm["bias"]


def _apply_conv(x: Any, kernel: Any, stride: int = 1) -> Any:
    import jax

    return jax.lax.conv_general_dilated(x, kernel, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _resnet_logits(params: dict[str, Any], x: Any) -> Any:
    import jax
    import jax.numpy as jnp

    h = jax.nn.relu(_batch_norm(_apply_conv(x, params["stem"]["conv"]), params["stem"]["bn"]))
    for i, (_, stride) in enumerate(RESNET_STAGES):
        block = params[f"stage{i + 1}"]
        shortcut = h
        out = jax.nn.relu(_batch_norm(_apply_conv(h, block["conv1"], stride), block["bn1"]))
        out = _batch_norm(_apply_conv(out, block["conv2"]), block["bn2"])
        if "proj" in block:
            shortcut = _batch_norm(_apply_conv(h, block["proj"], stride), block["proj_bn"])
        h = jax.nn.relu(out + shortcut)
    pooled = jnp.mean(h, axis=(1, 2))
    return pooled @ params["logits"]["w"] + params["logits"]["b"]


def _bert_params(spec: Any, key: Any, layer: Any) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    keys = iter(jax.random.split(key, 3 + 6 * spec.LAYERS))
    params: dict[str, Any] = {
        "token_embedding": jax.random.normal(next(keys), (spec.VOCAB, spec.HIDDEN), jnp.float32) * 0.05,
        "position_embedding": jax.random.normal(next(keys), (spec.SEQ_LEN, spec.HIDDEN), jnp.float32) * 0.05,
    }
    for i in range(spec.LAYERS):
        params[f"layer{i}"] = {
            "query": layer(next(keys), spec.HIDDEN, spec.HIDDEN), "key": layer(next(keys), spec.HIDDEN, spec.HIDDEN),
            "value": layer(next(keys), spec.HIDDEN, spec.HIDDEN), "output": layer(next(keys), spec.HIDDEN, spec.HIDDEN),
            "attention_norm": _norm(spec.HIDDEN),
            "ffn_in": layer(next(keys), spec.HIDDEN, spec.FFN), "ffn_out": layer(next(keys), spec.FFN, spec.HIDDEN),
            "ffn_norm": _norm(spec.HIDDEN),
        }
    params["logits"] = layer(next(keys), spec.HIDDEN, spec.CLASSES)
    return params


def _layer_norm(x: Any, norm: dict[str, Any]) -> Any:
    import jax.numpy as jnp

    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + NORM_EPS) * norm["scale"] + norm["bias"]


def _bert_logits(params: dict[str, Any], tokens: Any) -> Any:
    import jax
    import jax.numpy as jnp

    from tpudoctor.reference_models import bert_tiny as spec

    def dense(h: Any, p: dict[str, Any]) -> Any:
        return h @ p["w"] + p["b"]

    batch = tokens.shape[0]
    head_dim = spec.HIDDEN // spec.HEADS
    h = params["token_embedding"][tokens] + params["position_embedding"][None, :, :]
    for i in range(spec.LAYERS):
        p = params[f"layer{i}"]

        def heads(t: Any) -> Any:
            return t.reshape(batch, spec.SEQ_LEN, spec.HEADS, head_dim).transpose(0, 2, 1, 3)

        q, k, v = heads(dense(h, p["query"])), heads(dense(h, p["key"])), heads(dense(h, p["value"]))
        weights = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(float(head_dim)), axis=-1)
        attended = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, spec.SEQ_LEN, spec.HIDDEN)
        h = _layer_norm(h + dense(attended, p["output"]), p["attention_norm"])
        ffn = dense(jax.nn.gelu(dense(h, p["ffn_in"])), p["ffn_out"])
        h = _layer_norm(h + ffn, p["ffn_norm"])
    return dense(jnp.mean(h, axis=1), params["logits"])
