"""Queries over ``data/runtime_compat.toml``: TPU generations, runtime images, libtpu pins.

The knowledge is in the data file; this module parses names (``v5litepod-16``,
``tpu-vm-tf-2.16.1-pod-pjrt``) and answers questions with it. Pure functions, no I/O beyond
reading the packaged file once.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from functools import cache
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

ACCELERATOR_TYPE = re.compile(r"^(?P<prefix>[a-z0-9]+?)-(?P<size>[0-9]+)$")


def canonical_name(name: str) -> str:
    """PEP 503 name: ``torch_xla`` and ``Torch-XLA`` are both ``torch-xla``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclasses.dataclass(frozen=True)
class Generation:
    name: str
    prefixes: tuple[str, ...]
    counts: str
    cores_per_chip: int
    devices_per_chip: int
    chips_per_host: int
    single_host_max_chips: int
    tensorflow: bool
    tensorflow_min: str | None = None
    tensorflow_v4_suffix_until: str | None = None


@dataclasses.dataclass(frozen=True)
class Accelerator:
    accelerator_type: str
    generation: Generation
    size: int

    @property
    def chips(self) -> int:
        if self.generation.counts == "cores":
            return max(1, self.size // self.generation.cores_per_chip)
        return self.size

    @property
    def hosts(self) -> int:
        g = self.generation
        if self.chips <= g.single_host_max_chips:
            return 1
        return -(-self.chips // g.chips_per_host)

    @property
    def chips_per_host(self) -> int:
        return self.chips if self.hosts == 1 else self.generation.chips_per_host

    @property
    def local_devices(self) -> int:
        """JAX devices one host of this slice should list."""
        return self.chips_per_host * self.generation.devices_per_chip

    @property
    def local_cores(self) -> int:
        return self.chips_per_host * self.generation.cores_per_chip


@dataclasses.dataclass(frozen=True)
class TfImage:
    runtime_version: str
    tensorflow_version: str
    pod: bool
    device_api: str | None
    suffix: str | None


@dataclasses.dataclass(frozen=True)
class ImageVerdict:
    """Whether a runtime image suits a generation; ``known`` False means the table cannot say."""

    known: bool
    suitable: bool
    generations: tuple[str, ...]
    reason: str


class RuntimeCompat:
    def __init__(self, data: dict[str, Any]):
        self.version: int = data["version"]
        self.updated: str = data.get("updated", "")
        self.generations = {
            name: Generation(name=name, prefixes=tuple(g["prefixes"]), counts=g["counts"],
                             cores_per_chip=g["cores_per_chip"], devices_per_chip=g["devices_per_chip"],
                             chips_per_host=g["chips_per_host"], single_host_max_chips=g["single_host_max_chips"],
                             tensorflow=g["tensorflow"], tensorflow_min=g.get("tensorflow_min"),
                             tensorflow_v4_suffix_until=g.get("tensorflow_v4_suffix_until"))
            for name, g in data["generation"].items()
        }
        self.images = [(re.compile(i["match"]), tuple(i["generations"])) for i in data.get("runtime_image", [])]
        tf = data["tensorflow"]
        self.tf_image = re.compile(tf["image_pattern"])
        self.tf_device_api_from = Version(tf["device_api_required_from"])
        self.tf_suffix_generations = {k: tuple(v) for k, v in tf["suffix_generations"].items()}
        self.tf_newest_runtime = Version(tf["newest_tpu_runtime"])
        self.tf_newest_package = Version(tf["newest_tpu_package"])
        self.tf_tpu_distributions = tuple(tf["tpu_distributions"])
        self.tf_cpu_only_distributions = tuple(tf["cpu_only_distributions"])
        self.tf_known_problems = list(tf.get("known_problem", []))
        self.libtpu_pins = {
            canonical_name(p["framework"]): {pin["version"]: pin["requires"] for pin in p["pins"]}
            for p in data.get("libtpu_pin", [])
        }
        loaders = data["libtpu_loaders"]
        self.libtpu_loaders = tuple(canonical_name(n) for n in loaders["distributions"])
        self.tensorflow_opt_out = loaders["tensorflow_opt_out"]

    # accelerators --------------------------------------------------------------------------
    def accelerator(self, accelerator_type: str | None) -> Accelerator | None:
        match = ACCELERATOR_TYPE.match(accelerator_type.strip().lower()) if accelerator_type else None
        if not match or accelerator_type is None:
            return None
        for generation in self.generations.values():
            if match.group("prefix") in generation.prefixes:
                return Accelerator(accelerator_type, generation, int(match.group("size")))
        return None

    # runtime images ------------------------------------------------------------------------
    def parse_tf_image(self, runtime_version: str) -> TfImage | None:
        match = self.tf_image.match(runtime_version or "")
        if not match:
            return None
        parts = [p for p in match.group("rest").split("-") if p]
        api = next((p for p in parts if p in ("pjrt", "se")), None)
        rest = [p for p in parts if p not in ("pod", "pjrt", "se")]
        return TfImage(runtime_version, match.group("version"), "pod" in parts, api, "-".join(rest) or None)

    def image_verdict(self, runtime_version: str, generation: Generation) -> ImageVerdict:
        tf = self.parse_tf_image(runtime_version)
        if tf is None:
            for pattern, gens in self.images:
                if pattern.match(runtime_version):
                    ok = generation.name in gens
                    why = "" if ok else f"{runtime_version} is meant for {', '.join(gens)}, not {generation.name}"
                    return ImageVerdict(True, ok, gens, why)
            return ImageVerdict(False, True, (), f"{runtime_version} is not in tpudoctor's runtime table")
        version = Version(tf.tensorflow_version)
        if not generation.tensorflow:
            return ImageVerdict(True, False, (), f"{generation.name} does not support TensorFlow at all")
        if tf.suffix is not None:
            suffix_gens = self.tf_suffix_generations.get(tf.suffix)
            if suffix_gens is None:
                return ImageVerdict(False, True, (), f"unknown TensorFlow image suffix '-{tf.suffix}'")
            ok = generation.name in suffix_gens
            return ImageVerdict(True, ok, suffix_gens, "" if ok else
                                f"{runtime_version} is meant for {', '.join(suffix_gens)}, not {generation.name}")
        if generation.tensorflow_min and version < Version(generation.tensorflow_min):
            return ImageVerdict(True, False, (), f"{generation.name} needs TensorFlow {generation.tensorflow_min} "
                                                 f"or newer; {runtime_version} has {version}")
        until = generation.tensorflow_v4_suffix_until
        if until and version <= Version(until):
            return ImageVerdict(True, False, (), f"TensorFlow {version} on {generation.name} needs the "
                                                 f"{generation.name}-specific image ({runtime_version}-{generation.name})")
        if version >= self.tf_device_api_from and tf.device_api is None:
            return ImageVerdict(True, False, (), f"from TensorFlow {self.tf_device_api_from} the image must name "
                                                 f"its device API: {runtime_version}-pjrt or -se")
        return ImageVerdict(True, True, (), "")

    # libtpu pins ---------------------------------------------------------------------------
    def table_pin(self, framework: str, version: str) -> str | None:
        return self.libtpu_pins.get(canonical_name(framework), {}).get(version)


@cache
def load_compat() -> RuntimeCompat:
    text = resources.files("tpudoctor.data").joinpath("runtime_compat.toml").read_text(encoding="utf-8")
    return RuntimeCompat(tomllib.loads(text))


def declared_pin(requires: list[str] | None, extra: str | None, names: tuple[str, ...]) -> str | None:
    """The requirement on one of ``names`` in a package's Requires-Dist, for ``extra`` (None: base)."""
    for line in requires or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonical_name(req.name) not in names:
            continue
        if req.marker is None:
            if extra is None:
                return f"{req.name}{req.specifier}"
            continue
        if extra is not None and req.marker.evaluate({"extra": extra}) and not req.marker.evaluate({"extra": ""}):
            return f"{req.name}{req.specifier}"
    return None


def satisfies(requirement: str, installed: dict[str, str]) -> bool | None:
    """True/False when the named package is installed; None when it is not."""
    req = Requirement(requirement)
    version = installed.get(canonical_name(req.name))
    if version is None:
        return None
    try:
        return req.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False
