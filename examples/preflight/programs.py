"""Ten JAX training and inference steps that do not fit on a v5e:2x2 (15.75 GiB a chip for programs) as written,
for ``tpudoctor memory --topology v5e:2x2 --mesh data=2,model=2 --program examples/preflight/programs.py:NAME``.

Each factory takes the mesh and its knobs (keyword arguments) and returns ``(step, args)``: the step and its
arguments as ``jax.ShapeDtypeStruct`` with shardings on the mesh. Nothing here allocates a real array.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

PROGRAMS = ("mlp_adam", "transformer_block", "conv_net", "embedding_table", "no_donation_sgd",
            "f32_inference", "long_attention", "deep_scan", "wide_activations", "moe_experts")


def _struct(mesh, shape, dtype, *spec):
    return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype), sharding=NamedSharding(mesh, P(*spec)))


def _adam(params, grads, mu, nu, lr=1e-3, b1=0.9, b2=0.999):
    mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, mu, grads)
    nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, nu, grads)
    params = jax.tree.map(lambda p, m, v: p - lr * m / (jnp.sqrt(v) + 1e-8), params, mu, nu)
    return params, mu, nu


def mlp_adam(mesh, batch_size=1024, width=16384, layers=4, dtype="float32"):
    """An MLP trained with Adam; weights replicated, not donated: 4 GiB of weights, 8 of Adam state, 12 out."""
    params = {f"w{i}": _struct(mesh, (width, width), dtype) for i in range(layers)}
    opt = {"mu": params, "nu": params}
    x = _struct(mesh, (batch_size, width), dtype, "data")

    def loss(p, x):
        for i in range(layers):
            x = jax.nn.relu(x @ p[f"w{i}"])
        return jnp.mean(x * x)

    @jax.jit
    def step(params, opt_state, x):
        value, grads = jax.value_and_grad(loss)(params, x)
        params, mu, nu = _adam(params, grads, opt_state["mu"], opt_state["nu"])
        return params, {"mu": mu, "nu": nu}, value

    return step, (params, opt, x)


mlp_adam.preflight_knobs = {"batch_size": [512], "width": [8192]}


def transformer_block(mesh, batch_size=64, seq=2048, d_model=4096, heads=32, layers=2, remat=False):
    """Pre-norm transformer blocks (attention + MLP), model-parallel weights, SGD; the attention scores are
    kept for the backward pass of every layer."""
    head = d_model // heads
    layer = {"qkv": _struct(mesh, (d_model, 3 * d_model), "float32", None, "model"),
             "out": _struct(mesh, (d_model, d_model), "float32", "model", None),
             "up": _struct(mesh, (d_model, 4 * d_model), "float32", None, "model"),
             "down": _struct(mesh, (4 * d_model, d_model), "float32", "model", None)}
    params = [layer] * layers
    x = _struct(mesh, (batch_size, seq, d_model), "float32", "data")

    def block(p, x):
        b, s, _ = x.shape
        h = x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)
        q, k, v = jnp.split(h @ p["qkv"], 3, axis=-1)
        q, k, v = (t.reshape(b, s, heads, head) for t in (q, k, v))
        scores = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / head ** 0.5, axis=-1)
        x = x + jnp.einsum("bhqk,bkhd->bqhd", scores, v).reshape(b, s, d_model) @ p["out"]
        h = x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)
        return x + jax.nn.gelu(h @ p["up"]) @ p["down"]

    fn = jax.checkpoint(block) if remat else block

    def loss(params, x):
        for p in params:
            x = fn(p, x)
        return jnp.mean(x * x)

    def step(params, x):
        value, grads = jax.value_and_grad(loss)(params, x)
        return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), value

    return step, (params, x)


transformer_block.preflight_knobs = {"batch_size": [32], "remat": [True]}


def conv_net(mesh, batch_size=256, image=224, channels=256, layers=6):
    """A plain conv net (3x3 convs, ReLU) at full resolution: activations dominate."""
    params = [_struct(mesh, (3, 3, 3 if i == 0 else channels, channels), "float32") for i in range(layers)]
    x = _struct(mesh, (batch_size, image, image, 3), "float32", "data")

    def loss(params, x):
        for w in params:
            x = jax.nn.relu(jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                         dimension_numbers=("NHWC", "HWIO", "NHWC")))
        return jnp.mean(x)

    def step(params, x):
        value, grads = jax.value_and_grad(loss)(params, x)
        return jax.tree.map(lambda p, g: p - 1e-2 * g, params, grads), value

    return step, (params, x)


conv_net.preflight_knobs = {"batch_size": [128]}


def embedding_table(mesh, vocab=1 << 20, dim=3584, batch_size=4096):
    """A replicated f32 embedding table (14 GiB) looked up and trained with SGD."""
    table = _struct(mesh, (vocab, dim), "float32")
    ids = _struct(mesh, (batch_size,), "int32", "data")

    def loss(table, ids):
        return jnp.mean(jnp.take(table, ids, axis=0) ** 2)

    def step(table, ids):
        value, grad = jax.value_and_grad(loss)(table, ids)
        return table - 0.1 * grad, value

    return step, (table, ids)


embedding_table.preflight_knobs = {"vocab": [1 << 19]}


def no_donation_sgd(mesh, width=24576, layers=4, batch_size=1024):
    """SGD with momentum on model-sharded weights; params and momentum returned, none donated."""
    params = [_struct(mesh, (width, width), "float32", None, "model") for _ in range(layers)]
    momentum = [_struct(mesh, (width, width), "float32", None, "model") for _ in range(layers)]
    x = _struct(mesh, (batch_size, width), "float32", "data")

    def loss(params, x):
        for w in params:
            x = jnp.tanh(x @ w)
        return jnp.mean(x)

    def step(params, momentum, x):
        value, grads = jax.value_and_grad(loss)(params, x)
        momentum = jax.tree.map(lambda m, g: 0.9 * m + g, momentum, grads)
        return jax.tree.map(lambda p, m: p - 1e-3 * m, params, momentum), momentum, value

    return step, (params, momentum, x)


no_donation_sgd.preflight_knobs = {"width": [16384]}


def f32_inference(mesh, width=32768, layers=6, batch_size=512):
    """Forward pass only, f32 weights sharded over model: 24 GiB of weights, 12 a chip, plus the replicated
    output projection (4 GiB)."""
    params = [_struct(mesh, (width, width), "float32", None, "model") for _ in range(layers)]
    head = _struct(mesh, (width, width), "float32")
    x = _struct(mesh, (batch_size, width), "float32", "data")

    def step(params, head, x):
        for w in params:
            x = jax.nn.relu(x @ w)
        return x @ head

    return step, (params, head, x)


f32_inference.preflight_knobs = {"layers": [4]}


def long_attention(mesh, batch_size=8, seq=16384, d_model=2048, heads=16):
    """One attention layer at a long sequence: the scores (batch x heads x seq x seq) fill the chip."""
    head = d_model // heads
    params = {"qkv": _struct(mesh, (d_model, 3 * d_model), "float32", None, "model"),
              "out": _struct(mesh, (d_model, d_model), "float32", "model", None)}
    x = _struct(mesh, (batch_size, seq, d_model), "float32", "data")

    def loss(p, x):
        b, s, _ = x.shape
        q, k, v = jnp.split(x @ p["qkv"], 3, axis=-1)
        q, k, v = (t.reshape(b, s, heads, head) for t in (q, k, v))
        scores = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / head ** 0.5, axis=-1)
        return jnp.mean((jnp.einsum("bhqk,bkhd->bqhd", scores, v).reshape(b, s, d_model) @ p["out"]) ** 2)

    def step(params, x):
        value, grads = jax.value_and_grad(loss)(params, x)
        return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), value

    return step, (params, x)


long_attention.preflight_knobs = {"batch_size": [4, 2], "seq": [8192, 4096]}


def deep_scan(mesh, batch_size=512, width=8192, layers=64, remat=False):
    """A deep residual MLP as a scan over stacked layers: every layer's activations kept for the backward."""
    stacked = _struct(mesh, (layers, width, width), "float32", None, None, "model")
    x = _struct(mesh, (batch_size, width), "float32", "data")

    def layer(x, w):
        return x + jnp.tanh(x @ w), None

    body = jax.checkpoint(layer) if remat else layer

    def loss(w, x):
        x, _ = jax.lax.scan(body, x, w)
        return jnp.mean(x * x)

    def step(w, x):
        value, grad = jax.value_and_grad(loss)(w, x)
        return w - 1e-3 * grad, value

    return step, (stacked, x)


deep_scan.preflight_knobs = {"remat": [True], "batch_size": [256]}


def wide_activations(mesh, batch_size=131072, width=4096, expand=16):
    """An MLP with a 16x hidden expansion at a large batch: the hidden activations dominate."""
    up = _struct(mesh, (width, width * expand), "float32", None, "model")
    down = _struct(mesh, (width * expand, width), "float32", "model", None)
    x = _struct(mesh, (batch_size, width), "float32", "data")

    def loss(up, down, x):
        return jnp.mean((jax.nn.gelu(x @ up) @ down) ** 2)

    def step(up, down, x):
        value, (gu, gd) = jax.value_and_grad(loss, argnums=(0, 1))(up, down, x)
        return up - 1e-3 * gu, down - 1e-3 * gd, value

    return step, (up, down, x)


wide_activations.preflight_knobs = {"batch_size": [65536]}


def moe_experts(mesh, experts=32, width=4096, hidden=16384, batch_size=2048):
    """A mixture-of-experts layer with every expert replicated (not sharded over the data axis), dense
    dispatch, Adam state for the experts."""
    w_in = _struct(mesh, (experts, width, hidden), "bfloat16", None, None, "model")
    w_out = _struct(mesh, (experts, hidden, width), "bfloat16", None, "model", None)
    params = {"w_in": w_in, "w_out": w_out}
    opt = {"mu": params, "nu": params}
    x = _struct(mesh, (batch_size, width), "bfloat16", "data")
    router = _struct(mesh, (width, experts), "bfloat16")

    def loss(p, x, router):
        gates = jax.nn.softmax(x @ router, axis=-1)
        h = jax.nn.relu(jnp.einsum("bd,edh->beh", x, p["w_in"]))
        y = jnp.einsum("beh,ehd->bed", h, p["w_out"])
        return jnp.mean(jnp.einsum("bed,be->bd", y, gates).astype(jnp.float32) ** 2)

    def step(params, opt_state, x, router):
        value, grads = jax.value_and_grad(loss)(params, x, router)
        params, mu, nu = _adam(params, grads, opt_state["mu"], opt_state["nu"])
        return params, {"mu": mu, "nu": nu}, value

    return step, (params, opt, x, router)


moe_experts.preflight_knobs = {"batch_size": [1024], "experts": [16]}
