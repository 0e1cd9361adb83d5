"""Roofline and MFU of a TPU host's XLA ops and programs, from the capture's own cost stats.

Inputs are what the TPU runtime writes into the capture: per-op ``flops``, ``model_flops``,
``bytes_accessed`` and ``memory_access_breakdown`` (XLA op metadata of the device planes), and the
roofs ``peak_teraflops_per_second``, ``peak_hbm_bw_gigabytes_per_second``,
``peak_{vmem,cmem}_{rd,wr}_bw_gigabytes_per_second`` on each ``/device:TPU:N`` plane. Where a
capture has no roofs, ``PEAKS_BY_GENERATION`` (public per-chip figures) stands in.

Aggregation follows xprof's roofline_model / hlo_stats tools (measured to agree within 1 % on the
real v6e capture, see tests/test_profile_roofline.py):

* an op is (program id, HLO op name), summed over all its occurrences on all TensorCores;
* rates divide by the op's total (inclusive) time, i.e. they are per-core rates;
* the program's time is the sum over cores of each core's span from its first op start to its last
  op end (device clock), so idle gaps between ops inside that span lower the program's rates;
  without infeed/outfeed, those ops' time is taken out of it as well;
* HBM bytes of an op come from its ``memory_access_breakdown`` (memory space 1); an op without a
  breakdown counts all its ``bytes_accessed`` as HBM. The program sums the breakdowns only.
* the bound is the resource with the highest utilisation (FLOP rate / peak, or bandwidth / peak
  for each memory), and the roofline efficiency is that utilisation: measured FLOP rate over the
  roofline's attainable rate at the op's operational intensity.

Everything is columnar: per-event work is numpy/pandas; the breakdown protos are decoded once per
distinct op metadata (hundreds), not per event.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.device_op_rows import device_ops
from tpudoctor.profile.analysis.events import TPU_PLANE, device_kind, take
from tpudoctor.profile.analysis.grouping import Groups, float_total
from tpudoctor.profile.analysis.programs import op_programs

GB = 1e9

# Public per-chip peaks (dense bf16 FLOP/s, HBM bytes/s), used only when the capture's device
# planes carry no roofs. Sources, Google Cloud TPU system architecture pages:
#   v4:    https://cloud.google.com/tpu/docs/v4     (275 TFLOP/s bf16, 1,200 GB/s HBM)
#   v5e:   https://cloud.google.com/tpu/docs/v5e    (197 TFLOP/s bf16, 819 GB/s HBM)
#   v5p:   https://cloud.google.com/tpu/docs/v5p    (459 TFLOP/s bf16, 2,765 GB/s HBM)
#   v6e:   https://cloud.google.com/tpu/docs/v6e    (918 TFLOP/s bf16, 1,640 GB/s HBM)
#   TPU7x: https://cloud.google.com/tpu/docs/tpu7x  (2,307 TFLOP/s bf16, 4,614 fp8; 7.37 TB/s HBM)
# These are per chip. The roofline's rates are per device plane; v4 and v5p run their two
# TensorCores as one device (megacore), so chip = device there. A runtime that shows each TPU7x
# TensorCore as its own device would need half: not verified here, so prefer the capture's roofs.
PEAKS_BY_GENERATION: dict[str, tuple[float, float]] = {
    "v4": (275e12, 1200e9),
    "v5e": (197e12, 819e9),
    "v5p": (459e12, 2765e9),
    "v6e": (918e12, 1640e9),
    "tpu7x": (2307e12, 7370e9),
}
# device_type_string as the runtime writes it -> generation key of PEAKS_BY_GENERATION
_GENERATION_PATTERNS = (
    (re.compile(r"^TPU\s*v4", re.I), "v4"),
    (re.compile(r"^TPU\s*v5\s*(lite|e)\b", re.I), "v5e"),
    (re.compile(r"^TPU\s*v5(p)?\b", re.I), "v5p"),
    (re.compile(r"^TPU\s*v6\s*(lite|e)\b", re.I), "v6e"),
    (re.compile(r"^TPU\s*7x|^TPU\s*v7|ironwood", re.I), "tpu7x"),
)

# memory_access_breakdown: repeated MemoryAccessed{operation_type 1 (READ=1, WRITE=2),
# memory_space 2, bytes_accessed 3}; memory spaces as xprof numbers them.
MEMORY_SPACE_HBM, MEMORY_SPACE_CMEM, MEMORY_SPACE_VMEM = 1, 2, 3
_READ, _WRITE = 1, 2
BYTE_COLUMNS = ("hbm_bytes", "cmem_read_bytes", "cmem_write_bytes", "vmem_read_bytes", "vmem_write_bytes")
# resource -> (bytes column, DevicePeaks attribute) for every memory roof
MEMORY_ROOFS = {
    "hbm": ("hbm_bytes", "hbm_bytes_per_s"),
    "cmem_read": ("cmem_read_bytes", "cmem_read_bytes_per_s"),
    "cmem_write": ("cmem_write_bytes", "cmem_write_bytes_per_s"),
    "vmem_read": ("vmem_read_bytes", "vmem_read_bytes_per_s"),
    "vmem_write": ("vmem_write_bytes", "vmem_write_bytes_per_s"),
}
INFEED_OUTFEED_CATEGORIES = ("infeed", "outfeed")
SUMMED_COLUMNS = ("total_time_ps", "self_time_ps", "flops", "model_flops", "bytes_accessed", *BYTE_COLUMNS)


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


@dataclasses.dataclass(frozen=True)
class ProgramRoofline:
    """All ops of the capture's TensorCores together (xprof's "Program" row)."""

    time_ps: int
    """Sum over cores of first-op-start to last-op-end (device clock)."""
    time_per_core_ps: float
    n_cores: int
    flops: float
    model_flops: float
    bytes_accessed: float
    hbm_bytes: float
    flop_rate_flops_per_s: float
    model_flop_rate_flops_per_s: float
    memory_bw_bytes_per_s: float
    hbm_bw_bytes_per_s: float
    operational_intensity_flops_per_byte: float | None
    hbm_operational_intensity_flops_per_byte: float | None
    bound_by: str
    roofline_efficiency_percent: float
    compute_efficiency_percent: float
    """Measured (normalised) FLOP rate over the peak."""
    mfu_percent: float
    """Model FLOP rate over the peak: model FLOP utilisation."""
    hbm_bw_utilization_percent: float
    cmem_read_bytes: float = 0.0
    cmem_write_bytes: float = 0.0
    vmem_read_bytes: float = 0.0
    vmem_write_bytes: float = 0.0


@dataclasses.dataclass
class Roofline:
    """``ops``: one row per (program_id, op_name), heaviest first; columns (units in names):
    ``program_id`` (uint64), ``program`` (the HLO module's name), ``op_name``, ``category``, ``occurrences``, ``total_time_ps``,
    ``self_time_ps``, ``flops``, ``model_flops``, ``bytes_accessed``, ``hbm_bytes``,
    ``{cmem,vmem}_{read,write}_bytes``, ``flop_rate_flops_per_s``, ``model_flop_rate_flops_per_s``,
    ``memory_bw_bytes_per_s``, ``hbm_bw_bytes_per_s``, ``{cmem,vmem}_{read,write}_bw_bytes_per_s``,
    ``operational_intensity_flops_per_byte``, ``hbm_operational_intensity_flops_per_byte``,
    ``bound_by`` (compute, hbm, vmem_read, ...; "unknown" with neither FLOPs nor bytes),
    ``roofline_efficiency_percent``, ``compute_efficiency_percent``, ``mfu_percent``,
    ``max_memory_bw_utilization_percent``, ``total_time_percent`` (of the program time)."""

    peaks: DevicePeaks
    program: ProgramRoofline
    ops: pd.DataFrame

    def to_dict(self, *, max_ops: int | None = None) -> dict:
        """Plain data for a JSON document: ``peaks``, the ``program`` entry and one entry per op
        (heaviest first; ``program_id`` as a string, missing figures as None)."""
        ops = self.ops if max_ops is None else self.ops.head(max_ops)
        records = ops.assign(program_id=ops["program_id"].astype(str)).to_dict(orient="records")
        return {"peaks": dataclasses.asdict(self.peaks), "program": _plain(dataclasses.asdict(self.program)),
                "ops": [_plain(r) for r in records], "ops_total": len(self.ops)}

    @classmethod
    def from_dict(cls, data: dict) -> Roofline:
        """A roofline back from ``to_dict`` (the per-host map's plain data), for ``combine_rooflines``;
        ``program_id`` stays a string."""
        program = {f.name: data["program"].get(f.name) for f in dataclasses.fields(ProgramRoofline)}
        ops = pd.DataFrame.from_records(data.get("ops") or [])
        if not ops.empty:
            for col in ("occurrences", *SUMMED_COLUMNS):
                ops[col] = pd.to_numeric(ops[col], errors="coerce").fillna(0).astype(np.float64)
            ops["occurrences"] = ops["occurrences"].astype(np.int64)
        return cls(peaks=DevicePeaks(**data["peaks"]), program=ProgramRoofline(**program), ops=ops)


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


def decode_memory_access_breakdown(raw: bytes | None) -> dict[str, int]:
    """Bytes per roof (``BYTE_COLUMNS``) of one op's serialized ``memory_access_breakdown``."""
    out = dict.fromkeys(BYTE_COLUMNS, 0)
    if not isinstance(raw, (bytes, bytearray)) or not raw:
        return out
    for entry in _length_delimited(bytes(raw), 1):
        fields = _varints(entry)
        operation, space, nbytes = fields.get(1, 0), fields.get(2, 0), fields.get(3, 0)
        if space == MEMORY_SPACE_HBM:
            out["hbm_bytes"] += nbytes
        elif space in (MEMORY_SPACE_CMEM, MEMORY_SPACE_VMEM):
            prefix = "cmem" if space == MEMORY_SPACE_CMEM else "vmem"
            if operation == _READ:
                out[f"{prefix}_read_bytes"] += nbytes
            elif operation == _WRITE:
                out[f"{prefix}_write_bytes"] += nbytes
    return out


def analyze_roofline(host, *, include_infeed_outfeed: bool = True,
                     peaks: DevicePeaks | None = None) -> Roofline | None:
    """Roofline of one host's TPU ops; None when the host has no TPU ops or no known roofs."""
    if device_kind(host) != "tpu":
        return None
    peaks = peaks or device_peaks(host)
    ops = device_ops(host)
    if peaks is None or ops.empty:
        return None
    program_time_ps, n_cores = _program_time_ps(ops)
    category_ids, category_labels = ops.coded("hlo_category").mapped(str, missing="")
    chosen = None
    if not include_infeed_outfeed:  # as xprof: their time leaves the program's time too
        feeds = np.isin(category_labels, INFEED_OUTFEED_CATEGORIES)[category_ids]
        program_time_ps -= int(float_total(ops.duration_ps[feeds]))
        chosen = np.flatnonzero(~feeds)
    table, totals = _op_table(host, ops, chosen, category_ids, category_labels)
    programs = op_programs(ops)
    name_of = dict(zip(programs.ids, programs.names, strict=True))
    table.insert(1, "program", [name_of.get(str(pid), "") for pid in table["program_id"].astype(str)])
    return Roofline(peaks=peaks, program=_program(totals, program_time_ps, n_cores, peaks),
                    ops=_op_rates(table, program_time_ps, peaks))


def combine_rooflines(rooflines: Sequence[Roofline]) -> Roofline | None:
    """One roofline for several hosts (each from ``analyze_roofline`` in its own process): ops and
    program summed over hosts, rates recomputed, as xprof combines its per-host op stats."""
    parts = [r for r in rooflines if r is not None]
    if not parts:
        return None
    peaks = parts[0].peaks
    kinds = {r.peaks.device_kind for r in parts}
    if len(kinds) > 1:
        raise ValueError(f"cannot combine rooflines of different devices: {sorted(map(str, kinds))}")
    ops = pd.concat([r.ops for r in parts], ignore_index=True)
    sums = {c: (c, "sum") for c in ("occurrences", *SUMMED_COLUMNS)}
    names = {"program": ("program", "first")} if "program" in ops.columns else {}
    table = ops.groupby(["program_id", "op_name"], sort=False, dropna=False).agg(
        **names, category=("category", "first"), **sums).reset_index()
    time_ps = sum(r.program.time_ps for r in parts)
    totals = {c: sum(getattr(r.program, c) for r in parts)
              for c in ("flops", "model_flops", "bytes_accessed", *BYTE_COLUMNS)}
    program = _program(totals, time_ps, sum(r.program.n_cores for r in parts), peaks)
    return Roofline(peaks=peaks, program=program, ops=_op_rates(table, time_ps, peaks))


def _op_rates(table: pd.DataFrame, program_time_ps: int, peaks: DevicePeaks) -> pd.DataFrame:
    table = _rates(table, table["total_time_ps"].to_numpy(np.float64), peaks)
    table["total_time_percent"] = 100 * table["total_time_ps"] / max(program_time_ps, 1)
    table = table.sort_values(["self_time_ps", "op_name"], ascending=[False, True], kind="stable")
    return table.reset_index(drop=True)


def _op_table(host, ops, chosen: np.ndarray | None, category_ids: np.ndarray,
              category_labels: np.ndarray) -> tuple[pd.DataFrame, dict[str, float]]:
    """One row per (program id, op name) of the ops (at positions ``chosen``, or all) with their summed
    cost columns, and the program's totals. Made column by column over integer group ids: no frame
    with a row per op execution."""
    def at(values: np.ndarray) -> np.ndarray:
        return values if chosen is None else values[chosen]

    names = ops.coded("name")
    name_ids, name_labels = names.mapped(lambda n: n.split(" = ", 1)[0].lstrip("%"))
    name_ids = np.where(name_ids >= 0, name_ids, len(name_labels))  # no name: a group of its own
    name_labels = np.append(name_labels, None)
    program_ids, programs = _program_codes(ops)
    groups = Groups(at(program_ids), at(name_ids))
    first = groups.first_row
    categories = at(category_ids)
    table = pd.DataFrame({
        "program_id": pd.array(programs.take(at(program_ids)[first]), dtype="UInt64"),
        "op_name": name_labels[at(name_ids)[first]],
        "category": category_labels[categories[first]],
        "occurrences": groups.counts(),
    })
    del program_ids, name_ids, categories

    breakdown = _breakdown_per_metadata(host)
    # each op's breakdown row (-1: none), gathered column by column instead of a merge over all ops
    row = at(_metadata_rows(breakdown, take(ops.events, "plane_id", ops.rows),
                            take(ops.events, "metadata_id", ops.rows)))
    found = row >= 0

    def per_op(col: str) -> np.ndarray:
        return np.where(found, breakdown[col].to_numpy(np.float64)[row], 0.0)

    totals: dict[str, float] = {}
    columns = {"total_time_ps": lambda: at(ops.duration_ps), "self_time_ps": lambda: at(ops.self_ps),
               **{c: (lambda c=c: at(ops.whole_numbers(c)))
                  for c in ("flops", "model_flops", "bytes_accessed")},
               **{c: (lambda c=c: per_op(c)) for c in BYTE_COLUMNS}}
    for col in SUMMED_COLUMNS:
        values = columns[col]()
        if col == "hbm_bytes":
            totals["hbm_bytes"] = float_total(values)  # the program sums breakdowns only
            # An op without a breakdown: all its bytes are HBM bytes for the op's own figures.
            has_breakdown = found & breakdown["has_breakdown"].to_numpy(bool)[row]
            values = np.where(has_breakdown, values, columns["bytes_accessed"]())
        elif col not in ("total_time_ps", "self_time_ps"):
            totals[col] = float_total(values)
        table[col] = groups.sums(values)
        del values
    return table, totals


def _program_codes(ops) -> tuple[np.ndarray, pd.api.extensions.ExtensionArray]:
    """Each op's program id as a code into the distinct ids (UInt64; a missing id is 0)."""
    codes, programs = pd.factorize(pd.array(ops.values("program_id"), dtype="UInt64"), use_na_sentinel=True)
    programs = pd.array(programs, dtype="UInt64")
    if (codes < 0).any():
        zero = np.flatnonzero(programs.to_numpy(np.uint64, na_value=0) == 0) if len(programs) else np.zeros(0, int)
        if len(zero):
            codes[codes < 0] = zero[0]
        else:
            codes[codes < 0] = len(programs)
            programs = pd.array(np.r_[programs.to_numpy(np.uint64), np.uint64(0)], dtype="UInt64")
    return codes, programs


def _breakdown_per_metadata(host) -> pd.DataFrame:
    meta = host.event_metadata
    rows = {"plane_id": meta["plane_id"].to_numpy(np.int64), "metadata_id": meta["metadata_id"].to_numpy(np.int64)}
    raw = meta["memory_access_breakdown"].tolist() if "memory_access_breakdown" in meta.columns else [None] * len(meta)
    decoded = [decode_memory_access_breakdown(value) for value in raw]
    for col in BYTE_COLUMNS:
        rows[col] = np.fromiter((d[col] for d in decoded), dtype=np.float64, count=len(decoded))
    rows["has_breakdown"] = np.fromiter((isinstance(v, (bytes, bytearray)) and len(v) > 0 for v in raw),
                                        dtype=bool, count=len(raw))
    return pd.DataFrame(rows)


def _metadata_rows(meta: pd.DataFrame, plane_of_op: np.ndarray, id_of_op: np.ndarray) -> np.ndarray:
    """Row of ``meta`` (one row per plane and metadata id) of each op's (plane_id, metadata_id); -1 where
    absent. Looked up plane by plane in that plane's sorted ids (ops come grouped by plane)."""
    out = np.full(len(id_of_op), -1, dtype=np.int64)
    meta_plane = meta["plane_id"].to_numpy(np.int64)
    meta_id = meta["metadata_id"].to_numpy(np.int64)
    meta_order = np.lexsort((meta_id, meta_plane))  # by plane, then id
    sorted_meta_plane = meta_plane[meta_order]
    in_order = not len(plane_of_op) or bool(np.all(plane_of_op[1:] >= plane_of_op[:-1]))
    op_order = None if in_order else np.argsort(plane_of_op, kind="stable")
    sorted_op_plane = plane_of_op if op_order is None else plane_of_op[op_order]
    for plane in np.unique(sorted_op_plane):
        low, high = np.searchsorted(sorted_op_plane, [plane, plane + 1])
        meta_low, meta_high = np.searchsorted(sorted_meta_plane, [plane, plane + 1])
        if meta_low == meta_high:
            continue
        by_id = meta_order[meta_low:meta_high]
        ids = meta_id[by_id]
        ops_here = np.arange(low, high) if op_order is None else op_order[low:high]
        wanted = id_of_op[ops_here]
        position = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
        hit = ids[position] == wanted
        out[ops_here[hit]] = by_id[position[hit]]
    return out


def _program_time_ps(ops) -> tuple[int, int]:
    """Sum over cores of each core's first-op-start to last-op-end, and the number of cores."""
    spans = []
    for core in ops.cores_in_order():
        on_core = ops.core == core
        spans.append(int(ops.end_ps(on_core).max()) - int(ops.start_ps[on_core].min()))
    return int(sum(spans)), len(spans)


def _rates(table: pd.DataFrame, time_ps: np.ndarray, peaks: DevicePeaks) -> pd.DataFrame:
    seconds = time_ps / 1e12
    with np.errstate(divide="ignore", invalid="ignore"):
        per_s = np.where(seconds > 0, 1.0 / seconds, np.nan)
        table["flop_rate_flops_per_s"] = table["flops"] * per_s
        table["model_flop_rate_flops_per_s"] = table["model_flops"] * per_s
        table["memory_bw_bytes_per_s"] = table["bytes_accessed"] * per_s
        for resource, (bytes_col, _) in MEMORY_ROOFS.items():
            table[f"{resource}_bw_bytes_per_s"] = table[bytes_col] * per_s
        table["operational_intensity_flops_per_byte"] = np.where(
            table["bytes_accessed"] > 0, table["flops"] / table["bytes_accessed"], np.nan)
        table["hbm_operational_intensity_flops_per_byte"] = np.where(
            table["hbm_bytes"] > 0, table["flops"] / table["hbm_bytes"], np.nan)
    compute = table["flop_rate_flops_per_s"].to_numpy(np.float64) / peaks.flops_per_s
    utilizations = {"compute": compute}
    for resource, (_, peak_attr) in MEMORY_ROOFS.items():
        peak = getattr(peaks, peak_attr)
        if peak > 0:
            utilizations[resource] = table[f"{resource}_bw_bytes_per_s"].to_numpy(np.float64) / peak
    names = list(utilizations)
    stacked = np.nan_to_num(np.vstack([utilizations[n] for n in names]), nan=0.0)
    best = stacked.argmax(axis=0)
    top = stacked.max(axis=0)
    memory = np.nan_to_num(np.vstack([utilizations[n] for n in names[1:]]), nan=0.0).max(axis=0)
    table["bound_by"] = np.where(top > 0, np.asarray(names, dtype=object)[best], "unknown")
    table["roofline_efficiency_percent"] = 100 * top
    table["compute_efficiency_percent"] = 100 * np.nan_to_num(compute)
    table["mfu_percent"] = 100 * np.nan_to_num(table["model_flop_rate_flops_per_s"].to_numpy(np.float64)
                                               / peaks.flops_per_s)
    table["max_memory_bw_utilization_percent"] = 100 * memory
    return table


def _program(totals: dict[str, float], time_ps: int, n_cores: int, peaks: DevicePeaks) -> ProgramRoofline:
    row = _rates(pd.DataFrame({k: [v] for k, v in totals.items()}), np.asarray([float(time_ps)]), peaks).iloc[0]
    return ProgramRoofline(
        time_ps=time_ps, time_per_core_ps=time_ps / max(n_cores, 1), n_cores=n_cores,
        flops=float(row["flops"]), model_flops=float(row["model_flops"]),
        bytes_accessed=float(row["bytes_accessed"]), hbm_bytes=float(row["hbm_bytes"]),
        flop_rate_flops_per_s=float(row["flop_rate_flops_per_s"]),
        model_flop_rate_flops_per_s=float(row["model_flop_rate_flops_per_s"]),
        memory_bw_bytes_per_s=float(row["memory_bw_bytes_per_s"]),
        hbm_bw_bytes_per_s=float(row["hbm_bw_bytes_per_s"]),
        operational_intensity_flops_per_byte=_finite(row["operational_intensity_flops_per_byte"]),
        hbm_operational_intensity_flops_per_byte=_finite(row["hbm_operational_intensity_flops_per_byte"]),
        bound_by=str(row["bound_by"]),
        roofline_efficiency_percent=float(row["roofline_efficiency_percent"]),
        compute_efficiency_percent=float(row["compute_efficiency_percent"]),
        mfu_percent=float(row["mfu_percent"]),
        hbm_bw_utilization_percent=float(100 * row["hbm_bw_bytes_per_s"] / peaks.hbm_bytes_per_s),
        **{c: float(totals[c]) for c in BYTE_COLUMNS if c != "hbm_bytes"},
    )


def _plain(record: dict) -> dict:
    out = {}
    for key, value in record.items():
        if hasattr(value, "item"):
            value = value.item()
        if isinstance(value, float) and not np.isfinite(value):
            value = None
        out[key] = value
    return out


def _positive(value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if np.isfinite(number) and number > 0 else 0.0


def _finite(value) -> float | None:
    number = float(value)
    return number if np.isfinite(number) else None


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            break
    raise ValueError("truncated or overlong varint")


def _fields(data: bytes):
    """(field number, wire type, value) of a protobuf message: int for varints, bytes for LEN."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _read_varint(data, pos)
        elif wire_type == 2:
            length, pos = _read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire_type == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire_type == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        yield number, wire_type, value


def _length_delimited(data: bytes, number: int) -> list[bytes]:
    try:
        return [v for n, w, v in _fields(data) if n == number and w == 2]
    except ValueError:
        return []  # a damaged breakdown counts as none: the op falls back to bytes_accessed


def _varints(data: bytes) -> dict[int, int]:
    try:
        return {n: v for n, w, v in _fields(data) if w == 0}
    except ValueError:
        return {}
