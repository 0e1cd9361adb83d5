"""Step 3 facts: which node software this is, the libtpu pins the installed frameworks
declare, and the TPU environment variables, all without importing a framework."""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.provider import FactProvider
from tpudoctor.providers.node_identity import NODE_FACTS

LIBTPU_NAMES = ("libtpu", "libtpu-nightly")
# (distribution, extra that pulls libtpu; None: a base requirement)
PIN_SOURCES = (("jax", "tpu"), ("torch-xla", "tpu"), ("tensorflow-tpu", None))
TPU_ENV_VARS = (
    "TPU_LOAD_LIBRARY", "TPU_LIBRARY_PATH", "JAX_PLATFORMS", "PJRT_DEVICE", "TPU_NAME",
    "TPU_ACCELERATOR_TYPE", "TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES", "TPU_SKIP_MDS_QUERY",
    "TPU_VISIBLE_CHIPS", "TPU_PROCESS_BOUNDS", "TPU_CHIPS_PER_PROCESS_BOUNDS", "ALLOW_MULTIPLE_LIBTPU_LOAD",
    "LIBTPU_INIT_ARGS", "TPU_LOG_DIR", "ENABLE_PJRT_COMPATIBILITY",
)


class RuntimeTargetProvider(FactProvider):
    """The node's runtime image and accelerator type: step 1's node, else this VM's metadata."""

    name = "runtime_target"
    provides = ("runtime.target",)
    needs = NODE_FACTS
    timeout_s = 2.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        from tpudoctor.runtime_compat import load_compat

        node = facts.value("tpu.node") or {}
        vm = facts.value("metadata.tpu_vm") or {}
        env_type = os.environ.get("TPU_ACCELERATOR_TYPE")
        runtime_version = node.get("runtime_version") or vm.get("runtime_version")
        accelerator_type = node.get("accelerator_type") or vm.get("accelerator_type") or env_type
        if not runtime_version and not accelerator_type:
            return {"runtime.target": Unavailable(
                "not on a TPU VM and no node given (--tpu): the runtime version and accelerator type are unknown")}
        source = "tpu.node" if node.get("accelerator_type") or node.get("runtime_version") else (
            "metadata.tpu_vm" if vm else "TPU_ACCELERATOR_TYPE")
        accelerator = load_compat().accelerator(accelerator_type)
        return {"runtime.target": {
            "runtime_version": runtime_version,
            "accelerator_type": accelerator_type,
            "generation": accelerator.generation.name if accelerator else None,
            # Installed packages only describe the node when tpudoctor runs on one of its VMs.
            "on_tpu_vm": bool(vm) or bool(env_type),
            "source": source,
        }}


def libtpu_pins(installed: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """framework -> the libtpu requirement it declares (its own metadata wins over the table)."""
    from tpudoctor.runtime_compat import declared_pin, load_compat

    compat = load_compat()
    pins: dict[str, dict[str, Any]] = {}
    for dist, extra in PIN_SOURCES:
        version = installed.get(dist)
        if version is None:
            continue
        try:
            requires = metadata.requires(dist)
        except metadata.PackageNotFoundError:
            requires = None
        pin = declared_pin(requires, extra, LIBTPU_NAMES)
        where: str | None
        if pin is not None:
            where = f"{dist} {version} package metadata" + (f" ('{extra}' extra)" if extra else "")
        else:
            pin = compat.table_pin(dist, version)
            where = f"tpudoctor runtime table v{compat.version}" if pin else None
        pins[dist] = {"framework_version": version, "requirement": pin, "source": where}
    return pins


class FrameworkPinsProvider(FactProvider):
    name = "framework_pins"
    provides = ("runtime.libtpu_pins", "runtime.jaxlib_requirement", "runtime.env")
    needs = ("packages.installed",)
    timeout_s = 5.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        from tpudoctor.runtime_compat import declared_pin

        installed = facts.value("packages.installed") or {}
        jaxlib_req: Any = Unavailable("jax is not installed")
        if "jax" in installed:
            try:
                requires = metadata.requires("jax")
            except metadata.PackageNotFoundError:
                requires = None
            jaxlib_req = declared_pin(requires, None, ("jaxlib",)) or Unavailable(
                f"jax {installed['jax']} declares no jaxlib requirement")
        return {
            "runtime.libtpu_pins": libtpu_pins(installed),
            "runtime.jaxlib_requirement": jaxlib_req,
            "runtime.env": {k: os.environ[k] for k in TPU_ENV_VARS if k in os.environ},
        }
