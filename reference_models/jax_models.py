"""JAX versions of ``dense`` and ``mlp``: plain functions over a parameter pytree, no extra libraries.

They train on the same synthetic data as the Keras models (``make_data`` of the model module).
"""

from __future__ import annotations

from typing import Any

JAX_MODELS = ("dense", "mlp")


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
    k1, k2, k3 = jax.random.split(key, 3)
    return {"hidden_1": layer(k1, spec.FEATURES, spec.HIDDEN), "hidden_2": layer(k2, spec.HIDDEN, spec.HIDDEN),
            "logits": layer(k3, spec.HIDDEN, spec.CLASSES)}


def loss_fn(name: str, params: dict[str, Any], x: Any, y: Any) -> Any:
    import jax
    import jax.numpy as jnp

    if name == "dense":
        prediction = x @ params["dense"]["w"] + params["dense"]["b"]
        return jnp.mean((prediction - y) ** 2)
    h = jax.nn.relu(x @ params["hidden_1"]["w"] + params["hidden_1"]["b"])
    h = jax.nn.relu(h @ params["hidden_2"]["w"] + params["hidden_2"]["b"])
    logits = h @ params["logits"]["w"] + params["logits"]["b"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))
