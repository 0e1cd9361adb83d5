"""The exact versions a run used, read from package metadata (the TPU runtime library included)."""

from __future__ import annotations

import platform
from importlib import metadata

LIBTPU_DISTRIBUTIONS = ("libtpu", "libtpu-nightly", "tensorflow-tpu")


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def libtpu_version() -> str | None:
    for name in LIBTPU_DISTRIBUTIONS:
        found = _version(name)
        if found:
            return f"{name}=={found}"
    return None


def run_versions(framework: str) -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version(), "numpy": _version("numpy"),
                                    "libtpu": libtpu_version()}
    if framework == "tensorflow":
        import tensorflow as tf

        found["tensorflow"] = tf.__version__
        found["keras"] = _version("keras")
    else:
        found["jax"] = _version("jax")
        found["jaxlib"] = _version("jaxlib")
    from tpudoctor import __version__

    found["tpudoctor"] = __version__
    return found
