"""Reference models for step 5 and ``tpudoctor bench``.

Each model module (``dense``, ``mlp``, ``resnet_tiny``, ``bert_tiny``) generates its own synthetic
data and builds a small Keras model; ``train`` runs any of them the way TPU code must run
(TPUStrategy on a TPU, XLA-compiled step, global batch = per-replica batch x replicas),
``jax_train`` runs every model in JAX, and ``run`` is the subprocess entry point. Nothing here imports TensorFlow at import time.
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path
from types import ModuleType

MODEL_NAMES = ("dense", "mlp", "resnet_tiny", "bert_tiny")
FRAMEWORKS = ("tensorflow", "jax")
# Files whose change invalidates a throughput baseline (asv-style source hash): the model and its data.
_VERSIONED_FILES = ("synthetic.py",)


class UnknownModelError(ValueError):
    pass


def model_module(name: str) -> ModuleType:
    if name not in MODEL_NAMES:
        raise UnknownModelError(f"unknown reference model {name!r}; choose one of {', '.join(MODEL_NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")


def model_version(name: str, framework: str = "tensorflow") -> str:
    """A short hash of the model's source and the synthetic-data code, so edits invalidate baselines."""
    module = model_module(name)
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    extra = ("jax_models.py",) if framework == "jax" else ()
    for path in (Path(module.__file__).resolve(), *(here / f for f in (*_VERSIONED_FILES, *extra))):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return f"{name}-{digest.hexdigest()[:12]}"
