"""The roofs of a TPU device: from the capture's device planes (``peak_teraflops_per_second``,
``peak_hbm_bw_gigabytes_per_second``, ``peak_{vmem,cmem}_{rd,wr}_bw_gigabytes_per_second``), else from public
per-chip figures by device kind (``PEAKS_BY_GENERATION``).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from tpudoctor.accelerator_peaks import generation_patterns, generations
from tpudoctor.profile.analysis.events import TPU_PLANE

GB = 1e9

# Public per-chip peaks (dense bf16 FLOP/s, HBM bytes/s) from the one table (``tpudoctor.accelerator_peaks``,
# with its sources), used only when the capture's device planes carry no roofs. These are per chip. The
# roofline's rates are per device plane; v4 and v5p run their two TensorCores as one device (megacore), so chip =
# device there. A runtime that shows each TPU7x TensorCore as its own device would need half: not verified here,
# so prefer the capture's roofs.
_TPU_GENERATIONS = {key: peaks for key, peaks in generations().items() if peaks.label.startswith("TPU")}
PEAKS_BY_GENERATION: dict[str, tuple[float, float]] = {
    key: (peaks.bf16_tflops * 1e12, peaks.hbm_gbps * GB) for key, peaks in _TPU_GENERATIONS.items()}
# device_type_string as the runtime writes it -> generation key of PEAKS_BY_GENERATION
_GENERATION_PATTERNS = tuple((re.compile(pattern, re.I), key) for key, pattern in generation_patterns().items()
                             if key in _TPU_GENERATIONS)

# resource -> (bytes column, DevicePeaks attribute) for every memory roof
MEMORY_ROOFS = {
    "hbm": ("hbm_bytes", "hbm_bytes_per_s"),
    "cmem_read": ("cmem_read_bytes", "cmem_read_bytes_per_s"),
    "cmem_write": ("cmem_write_bytes", "cmem_write_bytes_per_s"),
    "vmem_read": ("vmem_read_bytes", "vmem_read_bytes_per_s"),
    "vmem_write": ("vmem_write_bytes", "vmem_write_bytes_per_s"),
}


@dataclasses.dataclass(frozen=True)
class DevicePeaks:
    """The roofs of one TensorCore. Zero bandwidth: the chip has no such memory (or no figure)."""

    device_kind: str | None
    flops_per_s: float
    hbm_bytes_per_s: float
    vmem_read_bytes_per_s: float = 0.0
    vmem_write_bytes_per_s: float = 0.0
    cmem_read_bytes_per_s: float = 0.0
    cmem_write_bytes_per_s: float = 0.0
    source: str = "capture"
    """"capture" (device plane stats) or "table:<generation>" (PEAKS_BY_GENERATION)."""

    def ridge_point_flops_per_byte(self, resource: str = "hbm") -> float | None:
        bandwidth = getattr(self, MEMORY_ROOFS[resource][1])
        return self.flops_per_s / bandwidth if bandwidth > 0 else None


def device_peaks(host) -> DevicePeaks | None:
    """The roofs from the first TPU plane that has them, else from the public table by device kind."""
    kind = None
    for plane_id, name in zip(host.planes["plane_id"], host.planes["plane_name"], strict=True):
        if not TPU_PLANE.match(str(name)):
            continue
        stats = host.plane_stats.get(int(plane_id), {})
        kind = kind or (stats.get("device_type_string") or None)
        flops = _positive(stats.get("peak_teraflops_per_second"))
        hbm = _positive(stats.get("peak_hbm_bw_gigabytes_per_second"))
        if flops and hbm:
            return DevicePeaks(
                device_kind=kind, flops_per_s=flops * 1e12, hbm_bytes_per_s=hbm * GB,
                vmem_read_bytes_per_s=_positive(stats.get("peak_vmem_rd_bw_gigabytes_per_second")) * GB,
                vmem_write_bytes_per_s=_positive(stats.get("peak_vmem_wr_bw_gigabytes_per_second")) * GB,
                cmem_read_bytes_per_s=_positive(stats.get("peak_cmem_rd_bw_gigabytes_per_second")) * GB,
                cmem_write_bytes_per_s=_positive(stats.get("peak_cmem_wr_bw_gigabytes_per_second")) * GB,
            )
    return peaks_for_device_kind(kind) if kind else None


def peaks_for_device_kind(kind: str) -> DevicePeaks | None:
    """Roofs of a ``device_type_string`` such as "TPU v5 lite" from ``PEAKS_BY_GENERATION``."""
    generation = tpu_generation(kind)
    if generation is None:
        return None
    flops, hbm = PEAKS_BY_GENERATION[generation]
    return DevicePeaks(device_kind=kind, flops_per_s=flops, hbm_bytes_per_s=hbm, source=f"table:{generation}")


def tpu_generation(kind: str | None) -> str | None:
    """"v4", "v5e", "v5p", "v6e", "tpu7x" for a device kind string; None when not known."""
    for pattern, generation in _GENERATION_PATTERNS:
        if kind and pattern.search(kind.strip()):
            return generation
    return None


def _positive(value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if np.isfinite(number) and number > 0 else 0.0
