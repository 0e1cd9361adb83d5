"""The published per-chip peaks (``tpudoctor/data/accelerator_peaks.toml``), found by a device's kind: the one table that
``tpudoctor diag`` judges against and a profile's roofline falls back to."""

from __future__ import annotations

import dataclasses
import functools
import re
from importlib import resources

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


@dataclasses.dataclass(frozen=True)
class Peaks:
    generation: str
    label: str
    bf16_tflops: float | None
    hbm_gbps: float | None
    ici_gbps: float | None
    source: str
    table_version: int
    dcn_gbps: float | None = None
    """Data-centre network bandwidth per chip, across slices (none published in a form we could verify yet)."""


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    return tomllib.loads(resources.files("tpudoctor.data").joinpath("accelerator_peaks.toml").read_text("utf-8"))


def table_version() -> int:
    return int(_table()["version"])


def generations() -> dict[str, Peaks]:
    table = _table()
    return {key: Peaks(generation=key, label=g["label"], bf16_tflops=g.get("bf16_tflops"), hbm_gbps=g.get("hbm_gbps"),
                       ici_gbps=g.get("ici_gbps"), source=g["source"], table_version=int(table["version"]),
                       dcn_gbps=g.get("dcn_gbps"))
            for key, g in table["generations"].items()}


def generation_patterns() -> dict[str, str]:
    """Generation -> the regular expression its device kinds match, in the table's order (v5e before v5p)."""
    return {key: entry["match"] for key, entry in _table()["generations"].items()}


def peaks_for(device_kind: str) -> Peaks | None:
    """The peaks of the generation whose pattern matches ``device_kind`` (``TPU v6 lite``, ``NVIDIA H200``);
    None for a CPU or a kind the table does not know."""
    table = _table()["generations"]
    for key, entry in table.items():
        if re.search(entry["match"], device_kind or "", re.I):
            return generations()[key]
    return None
