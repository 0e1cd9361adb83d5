"""The Python interpreter and the installed ML packages, read without importing any framework."""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts
from tpudoctor.provider import FactProvider

# Distribution names whose presence and version matter on a TPU VM.
WATCHED_DISTRIBUTIONS = (
    "tensorflow", "tensorflow-tpu", "tensorflow-cpu", "tf-nightly", "keras", "tf-keras",
    "jax", "jaxlib", "libtpu", "libtpu-nightly", "torch", "torch_xla", "torch-xla",
    "flax", "optax", "orbax-checkpoint", "tensorboard-plugin-profile", "xprof", "cloud-tpu-client",
)


def installed_versions(names: tuple[str, ...] = WATCHED_DISTRIBUTIONS) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in names:
        try:
            found[metadata.distribution(name).metadata["Name"].lower().replace("_", "-")] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


class PythonEnvProvider(FactProvider):
    name = "python_env"
    provides = ("python.version", "python.implementation", "python.executable", "packages.installed")
    timeout_s = 5.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        return {
            "python.version": ".".join(str(p) for p in sys.version_info[:3]),
            "python.implementation": platform.python_implementation(),
            "python.executable": sys.executable,
            "packages.installed": installed_versions(),
        }
