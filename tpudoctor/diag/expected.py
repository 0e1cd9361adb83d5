"""How many chips, and JAX devices, this host should show: from ``--expect-chips`` or from the accelerator type.

Devices and chips differ by generation (``data/runtime_compat.toml``, from tpu-info's ``devices_per_chip`` and the
Cloud TPU system-architecture pages): a v2 or v3 chip shows as two JAX devices (one per TensorCore), a v4 or v5p
chip as one (megacore: two TensorCores, one device), a v5e or v6e chip as one (one TensorCore), a TPU7x chip as
two. So a v3-8 host has 4 chips and 8 devices, a v4-8 host 4 and 4, a v5litepod-8 host 8 and 8, and a host of a
multi-host slice its generation's chips per host (v4-16: 4 of the 8 chips).
"""

from __future__ import annotations

import dataclasses

from tpudoctor.runtime_compat import load_compat


@dataclasses.dataclass(frozen=True)
class ExpectedCount:
    chips: int
    devices_per_chip: int
    source: str
    """Where the count comes from, in words (``--expect-chips``, ``accelerator type v4-8``)."""
    accelerator_type: str | None = None
    generation: str | None = None

    @property
    def devices(self) -> int:
        return self.chips * self.devices_per_chip


def expected_count(expect_chips: int | None, accelerator_type: str | None) -> ExpectedCount | None:
    """``--expect-chips`` where given (as devices through the type's devices per chip, where the type is known),
    else the chips one host of ``accelerator_type`` has; None when neither says."""
    accelerator = load_compat().accelerator(accelerator_type) if accelerator_type else None
    per_chip = accelerator.generation.devices_per_chip if accelerator else 1
    generation = accelerator.generation.name if accelerator else None
    if expect_chips is not None:
        return ExpectedCount(expect_chips, per_chip, "--expect-chips", accelerator_type, generation)
    if accelerator is None:
        return None
    hosts = (f" ({accelerator.chips} chips, {accelerator.chips_per_host} on each of its {accelerator.hosts} hosts)"
             if accelerator.hosts > 1 else "")
    return ExpectedCount(accelerator.chips_per_host, per_chip, f"accelerator type {accelerator_type}{hosts}",
                         accelerator_type, generation)
