"""Roofline and MFU of a TPU host's XLA ops and programs, from the capture's own cost stats.

Inputs are what the TPU runtime writes into the capture: per-op ``flops``, ``model_flops``,
``bytes_accessed`` and ``memory_access_breakdown`` (XLA op metadata of the device planes), and the
roofs ``peak_teraflops_per_second``, ``peak_hbm_bw_gigabytes_per_second``,
``peak_{vmem,cmem}_{rd,wr}_bw_gigabytes_per_second`` on each ``/device:TPU:N`` plane. Where a
capture has no roofs, ``PEAKS_BY_GENERATION`` (public per-chip figures) stands in (both in ``device_peaks``).

Aggregation follows xprof's roofline_model / hlo_stats tools (measured to agree within 1 % on the
real v6e capture, see tests/profile/test_profile_roofline.py):

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
from collections.abc import Sequence

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.device_op_rows import OP_CHUNK, device_ops
from tpudoctor.profile.analysis.device_peaks import MEMORY_ROOFS, DevicePeaks, device_peaks
from tpudoctor.profile.analysis.events import device_kind
from tpudoctor.profile.analysis.grouping import Coded, Groups, SumsByRow, float_total
from tpudoctor.profile.analysis.memory_access import (
    BYTE_COLUMNS,
    breakdown_per_metadata,
)
from tpudoctor.profile.analysis.programs import op_programs

INFEED_OUTFEED_CATEGORIES = ("infeed", "outfeed")
SUMMED_COLUMNS = ("total_time_ps", "self_time_ps", "flops", "model_flops", "bytes_accessed", *BYTE_COLUMNS)


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
    category = ops.coded("hlo_category")
    chosen = None
    if not include_infeed_outfeed:  # as xprof: their time leaves the program's time too
        feeds = category.isin(INFEED_OUTFEED_CATEGORIES)
        program_time_ps -= int(float_total(ops.duration_ps[feeds]))
        chosen = np.flatnonzero(~feeds)
        del feeds
    table, totals = _op_table(host, ops, chosen, category)
    del category
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


def _op_table(host, ops, chosen: np.ndarray | None, category: Coded) -> tuple[pd.DataFrame, dict[str, float]]:
    """One row per (program id, op name) of the ops (at positions ``chosen``, or all) with their summed
    cost columns, and the program's totals. Made column by column over integer group ids: no frame
    with a row per op execution."""
    def at(values: np.ndarray) -> np.ndarray:
        return values if chosen is None else values[chosen]

    name_ids, name_labels = ops.coded("name").mapped(lambda n: n.split(" = ", 1)[0].lstrip("%"))
    name_ids[name_ids < 0] = len(name_labels)  # no name: a group of its own
    name_labels = np.append(name_labels, None)
    program_ids, programs = _program_codes(ops)
    groups = Groups(at(program_ids), at(name_ids))
    first = groups.first_row
    first_op = first if chosen is None else chosen[first]
    table = pd.DataFrame({
        "program_id": pd.array(programs.take(program_ids[first_op]), dtype="UInt64"),
        "op_name": name_labels[name_ids[first_op]],
        "category": category.table(str, missing="")[category.codes[first_op]],
        "occurrences": groups.counts(),
    })
    del program_ids, name_ids

    # the times first, the ops' own arrays: summed before the ops' metadata rows are looked up (at a big
    # capture's group sums of times that are not exact, pandas' sum is the analyses' largest temporary)
    for col in ("total_time_ps", "self_time_ps"):
        table[col] = groups.sums(at(ops.duration_ps if col == "total_time_ps" else ops.self_ps))
    breakdown = breakdown_per_metadata(host)  # a row per row of host.event_metadata
    # each op's metadata row (-1: none): its breakdown's and its metadata stats', gathered column by column
    op_rows = ops.metadata_rows()
    row = at(op_rows)
    by_row = SumsByRow.of(groups, row, len(breakdown)) if chosen is None else None
    per_row = _metadata_columns(ops, breakdown) if by_row is not None else {}

    def per_op(col: str) -> np.ndarray:
        return _gathered(breakdown[col].to_numpy(np.float64), row, 0.0)

    totals: dict[str, float] = {}
    columns = {**{c: (lambda c=c: at(ops.whole_numbers(c, op_rows)))
                  for c in ("flops", "model_flops", "bytes_accessed")},
               **{c: (lambda c=c: per_op(c)) for c in BYTE_COLUMNS}}
    found = by_row.sums_and_total(per_row["hbm_breakdown"]) if "hbm_breakdown" in per_row else None
    # the program sums breakdowns only
    totals["hbm_bytes"] = found[1] if found is not None else float_total(per_op("hbm_bytes"))
    bytes_accessed = None  # kept from its own column for the hbm column's ops without a breakdown
    for col in SUMMED_COLUMNS[2:]:
        found = by_row.sums_and_total(per_row[col]) if col in per_row else None
        if found is not None:  # from how many ops of each group have each metadata row: no per-op array
            table[col] = found[0]
            if col != "hbm_bytes":
                totals[col] = found[1]
            continue
        if col == "hbm_bytes":
            if bytes_accessed is None:
                bytes_accessed = columns["bytes_accessed"]()
            # An op without a breakdown: all its bytes are HBM bytes for the op's own figures; the
            # others' are their breakdown's, written over their bytes_accessed (no second array).
            _write_breakdown_hbm(bytes_accessed, breakdown["hbm_bytes"].to_numpy(np.float64),
                                 breakdown["has_breakdown"].to_numpy(bool), row)
            values, bytes_accessed = bytes_accessed, None
        else:
            values = columns[col]()
        if col == "bytes_accessed" and "hbm_bytes" not in per_row:
            bytes_accessed = values
        if col != "hbm_bytes":
            totals[col] = float_total(values)
        table[col] = groups.sums(values)
        del values
    return table, totals


def _metadata_columns(ops, breakdown: pd.DataFrame) -> dict[str, np.ndarray]:
    """The summed columns whose value an op takes from its metadata row, one value per row of ``breakdown``
    (``host.event_metadata``'s), as the op's own column reads it: the metadata stats (int64, 0 where missing),
    the breakdown's bytes, and the hbm column (the breakdown's HBM bytes, else all of ``bytes_accessed``)."""
    out: dict[str, np.ndarray] = {}
    for col in ("flops", "model_flops", "bytes_accessed"):
        if col in ops.events.columns or ops.integer_kind(col) != "i":
            continue  # an event's own stat, not its metadata's
        try:
            out[col] = ops.host.metadata_stat(col).to_numpy(np.int64, na_value=0)
        except (TypeError, ValueError, OverflowError):
            continue
    for col in BYTE_COLUMNS:
        out[col if col != "hbm_bytes" else "hbm_breakdown"] = breakdown[col].to_numpy(np.float64)
    if "bytes_accessed" in out:
        hbm = out["bytes_accessed"].copy()
        has = breakdown["has_breakdown"].to_numpy(bool)
        hbm[has] = out["hbm_breakdown"][has]
        out["hbm_bytes"] = hbm
    return out


def _write_breakdown_hbm(values: np.ndarray, hbm: np.ndarray, has_breakdown: np.ndarray, row: np.ndarray) -> None:
    """Each op's HBM bytes from its breakdown written over ``values`` (its bytes_accessed) where it has a
    breakdown (``row``: its breakdown row, -1: none), a chunk of ops at a time; whole numbers either way."""
    hbm, has_breakdown = np.append(hbm, 0.0), np.append(has_breakdown, False)  # row -1 reads the appended entries
    for low in range(0, len(row), OP_CHUNK):
        chunk = row[low:low + OP_CHUNK]
        np.copyto(values[low:low + OP_CHUNK], hbm[chunk], casting="unsafe", where=has_breakdown[chunk])


def _gathered(table: np.ndarray, row: np.ndarray, missing) -> np.ndarray:
    """``table[row]``, ``missing`` where ``row`` is -1 (it reads an entry appended to the table: no temporaries)."""
    return np.append(table, np.asarray(missing, table.dtype))[row]


def _program_codes(ops) -> tuple[np.ndarray, pd.api.extensions.ExtensionArray]:
    """Each op's program id as a code into the distinct ids (UInt64; a missing id is 0)."""
    of_op = op_programs(ops)
    if len(of_op.codes) and of_op.codes.min() >= 0:  # every op has its program: the ids of their codes, no second pass
        index: dict[int, int] = {}
        table = np.fromiter((index.setdefault(int(pid) if pid else 0, len(index)) for pid in of_op.ids.tolist()),
                            np.int32, len(of_op.ids))
        return table[of_op.codes], pd.array(np.array(list(index), np.uint64), dtype="UInt64")
    codes, programs = ops.factorized("program_id", "UInt64")
    programs = pd.array(programs, dtype="UInt64")
    if (codes < 0).any():
        zero = np.flatnonzero(programs.to_numpy(np.uint64, na_value=0) == 0) if len(programs) else np.zeros(0, int)
        if len(zero):
            codes[codes < 0] = zero[0]
        else:
            codes[codes < 0] = len(programs)
            programs = pd.array(np.r_[programs.to_numpy(np.uint64), np.uint64(0)], dtype="UInt64")
    return codes, programs


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


def _finite(value) -> float | None:
    number = float(value)
    return number if np.isfinite(number) else None


