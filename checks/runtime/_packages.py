"""Reading the ``packages.installed`` fact the same way in every runtime check."""

from __future__ import annotations

from collections.abc import Mapping

from tpudoctor.runtime_compat import load_compat

FRAMEWORKS = ("tensorflow", "tensorflow-tpu", "tf-nightly", "tensorflow-cpu", "jax", "torch-xla")
LIBTPU_DISTRIBUTIONS = ("libtpu", "libtpu-nightly")


def installed_frameworks(installed: Mapping[str, str]) -> dict[str, str]:
    return {name: installed[name] for name in FRAMEWORKS if name in installed}


def installed_tensorflow(installed: Mapping[str, str]) -> tuple[str, str] | None:
    """(distribution, version) of the TensorFlow build, preferring a TPU-capable one."""
    compat = load_compat()
    for name in compat.tf_tpu_distributions + compat.tf_cpu_only_distributions:
        if name in installed:
            return name, installed[name]
    return None


def installed_libtpu(installed: Mapping[str, str]) -> tuple[str, str] | None:
    for name in LIBTPU_DISTRIBUTIONS:
        if name in installed:
            return name, installed[name]
    return None
