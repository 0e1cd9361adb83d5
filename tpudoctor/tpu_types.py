"""What tpudoctor knows about TPU generations: PCI ids, accelerator-type names, chips per host.

Data tables, not if-chains, so a new generation is one row. Figures from the research notes
(tpu-info ``device.py``, jax ``hardware_utils.py``, the Cloud TPU system-architecture pages).
"""

from __future__ import annotations

import dataclasses
import re

GOOGLE_PCI_VENDOR = "0x1ae0"


@dataclasses.dataclass(frozen=True)
class Generation:
    name: str
    """Family name as in accelerator types: v2, v3, v4, v5p, v5e, v6e, tpu7x."""
    type_prefixes: tuple[str, ...]
    """Accelerator-type prefixes before the dash: ``v5litepod`` for v5e."""
    suffix_counts: str
    """What the number after the dash counts: "tensorcores" or "chips"."""
    cores_per_chip: int
    chips_per_host: int
    """Chips on one VM of a multi-host slice."""
    max_single_host_chips: int
    """Largest slice that fits on one VM (v5e and v6e have 8-chip VMs)."""
    device_node: str
    """"accel" (``/dev/accelN``) or "vfio" (``/dev/vfio/<iommu_group>``)."""
    served_by_tpu_api: bool = True


GENERATIONS: tuple[Generation, ...] = (
    Generation("v2", ("v2",), "tensorcores", 2, 4, 4, "accel"),
    Generation("v3", ("v3",), "tensorcores", 2, 4, 4, "accel"),
    Generation("v4", ("v4",), "tensorcores", 2, 4, 4, "accel"),
    Generation("v5p", ("v5p",), "tensorcores", 2, 4, 4, "vfio"),
    Generation("v5e", ("v5litepod", "v5e"), "chips", 1, 4, 8, "vfio"),
    Generation("v6e", ("v6e",), "chips", 1, 4, 8, "vfio"),
    Generation("tpu7x", ("tpu7x", "v7x", "tpu7"), "tensorcores", 2, 4, 4, "vfio", served_by_tpu_api=False),
)

# (device id, subsystem device id or None) -> generation name.
PCI_DEVICE_IDS: dict[tuple[str, str | None], str] = {
    ("0x0027", "0x004e"): "v2",
    ("0x0027", "0x004f"): "v3",
    ("0x005e", None): "v4",
    ("0x0062", None): "v5p",
    ("0x0063", None): "v5e",
    ("0x006f", None): "v6e",
    ("0x0076", None): "tpu7x",
}

_BY_NAME = {g.name: g for g in GENERATIONS}
_BY_PREFIX = {p: g for g in GENERATIONS for p in g.type_prefixes}
_ACCELERATOR_TYPE = re.compile(r"^(?P<prefix>[a-z0-9]+?)-(?P<count>\d+)$")


def generation(name: str) -> Generation | None:
    return _BY_NAME.get(name)


def generation_for_pci(device_id: str, subsystem_device_id: str | None = None) -> str | None:
    device_id = device_id.strip().lower()
    sub = (subsystem_device_id or "").strip().lower() or None
    return PCI_DEVICE_IDS.get((device_id, sub)) or PCI_DEVICE_IDS.get((device_id, None))


@dataclasses.dataclass(frozen=True)
class AcceleratorShape:
    accelerator_type: str
    generation: Generation
    total_chips: int
    hosts: int
    chips_per_host: int


def parse_accelerator_type(accelerator_type: str | None) -> AcceleratorShape | None:
    """``v4-8`` -> 4 chips on 1 host; ``v6e-16`` -> 16 chips on 4 hosts. None when unknown."""
    match = _ACCELERATOR_TYPE.match(accelerator_type.strip().lower()) if accelerator_type else None
    if not match or accelerator_type is None:
        return None
    gen = _BY_PREFIX.get(match["prefix"])
    if gen is None:
        return None
    count = int(match["count"])
    chips = count // gen.cores_per_chip if gen.suffix_counts == "tensorcores" else count
    if chips <= 0:
        return None
    per_host = chips if chips <= gen.max_single_host_chips else gen.chips_per_host
    hosts = max(1, -(-chips // per_host))
    return AcceleratorShape(accelerator_type, gen, chips, hosts, per_host)


def is_tpu_api_unsupported(accelerator_type: str | None) -> bool:
    """TPU7x and later are managed through Compute Engine or GKE, not the Cloud TPU API."""
    shape = parse_accelerator_type(accelerator_type)
    if shape is not None:
        return not shape.generation.served_by_tpu_api
    prefix = (accelerator_type or "").split("-")[0].lower()
    return prefix in {"tpu7x", "v7x", "tpu7"}
