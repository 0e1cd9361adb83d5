"""Device duty cycle, top ops by self time, and MXU/HBM figures where the capture has them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tpudoctor.captures.xspace.lookup import code_dtype
from tpudoctor.profile.analysis.device_op_rows import device_ops
from tpudoctor.profile.analysis.events import module_rows, take
from tpudoctor.profile.analysis.grouping import (
    Coded,
    Groups,
    SumsByRow,
    float_total,
)
from tpudoctor.profile.analysis.intervals import union_ps
from tpudoctor.profile.analysis.programs import (
    OP_KINDS,
    PROGRAM_COLUMNS,
    kind_totals_ms,
    op_kinds,
    op_programs,
    program_table,
)


@dataclasses.dataclass
class DeviceOps:
    """``top_ops``: one row per (program, op), as xprof's hlo_stats keeps them: ``program`` (the HLO
    module's name; '' for device work of no program), ``program_id``, ``name``, ``kind`` (one of
    ``programs.OP_KINDS``: hlo-op, runtime-copy, other), ``category``, ``count``, ``self_ms``,
    ``self_percent`` (of all op self time), ``flops_per_s`` where flops are known. ``per_core``:
    ``core``, ``busy_ms``, ``window_ms``, ``duty_cycle_percent``. ``programs``: ``programs.program_table``.
    ``kind_ms``: self time of each kind of op (``hlo_op_ms``, ``runtime_copy_ms``, ``other_ms``)."""

    top_ops: pd.DataFrame
    categories: pd.DataFrame
    per_core: pd.DataFrame
    duty_cycle_percent: float
    idle_percent: float
    mxu_utilization_percent: float | None
    hbm_utilization_percent: float | None
    flops_utilization_percent: float | None
    programs: pd.DataFrame = dataclasses.field(default_factory=lambda: pd.DataFrame(columns=PROGRAM_COLUMNS))
    kind_ms: dict[str, float] = dataclasses.field(default_factory=dict)


TOP_OP_COLUMNS = ["program", "program_id", "name", "kind", "category", "count", "self_ms", "self_percent",
                  "flops_per_s"]


def analyze_device_ops(host, *, top_n: int = 15, programs: pd.DataFrame | None = None) -> DeviceOps:
    """``programs``: the host's ``program_table`` where already made."""
    ops = device_ops(host)
    if ops.empty:
        empty = pd.DataFrame(columns=TOP_OP_COLUMNS)
        return DeviceOps(empty, pd.DataFrame(columns=["category", "self_ms", "self_percent"]),
                         pd.DataFrame(columns=["core", "busy_ms", "window_ms", "duty_cycle_percent"]),
                         0.0, 0.0, None, None, None, kind_ms=kind_totals_ms(ops, op_kinds(ops)))
    kinds = op_kinds(ops)
    of_op = op_programs(ops, kinds)
    # ops of no program are keyed by their kind: one more code per kind after the programs'
    program_ids = of_op.codes.copy()
    no_program = program_ids < 0
    program_ids[no_program] = kinds[no_program].astype(np.int32) + len(of_op.ids)
    del no_program
    program_names = np.r_[of_op.names, [""] * len(OP_KINDS)].astype(object)
    program_id_texts = np.r_[of_op.ids, [""] * len(OP_KINDS)].astype(object)
    # Ops are grouped by integer ids of their (program, name, category) texts, each text made once.
    name_ids, name_labels = op_name_ids(ops)
    category = ops.coded("hlo_category")
    category_ids, category_labels = category.mapped(str, missing="")
    del category
    self_ps = ops.self_ps
    total = max(ops.self_total_ps(), 1.0)
    groups = Groups(program_ids, name_ids, category_ids)
    first = groups.first_row
    # each group's texts are read at its first op; the per-op ids go before the per-op FLOPs are read
    g = pd.DataFrame({"program": program_names[program_ids[first]], "program_id": program_id_texts[program_ids[first]],
                      "name": name_labels[name_ids[first]], "kind": np.array(OP_KINDS, dtype=object)[kinds[first]],
                      "category": category_labels[category_ids[first]], "count": groups.counts(),
                      "self_ps": groups.sums(self_ps)})
    del program_ids, name_ids
    by_category = Groups(category_ids)
    del category_ids
    found = _flops_by_row(ops, groups)
    if found is not None:
        g["flops"], flops_total, flops_known = found
    else:
        flops = ops.numbers("flops", ops.metadata_rows())  # a metadata stat: read through each op's metadata row
        g["flops"] = groups.sums(flops)
        flops_total, flops_known = np.nansum(flops), bool(np.isfinite(flops).any())
        del flops
    del groups
    g = g.sort_values(["self_ps", "program", "name"], ascending=[False, True, True], kind="stable").head(top_n)
    top = pd.DataFrame({"program": g["program"].to_numpy(), "program_id": g["program_id"].to_numpy(),
                        "name": g["name"].to_numpy(), "kind": g["kind"].to_numpy(), "category": g["category"].to_numpy(),
                        "count": g["count"].astype(int).to_numpy(), "self_ms": g["self_ps"].to_numpy() / 1e9,
                        "self_percent": 100 * g["self_ps"].to_numpy() / total,
                        "flops_per_s": np.where(g["self_ps"] > 0, g["flops"] / (g["self_ps"] / 1e12), np.nan)})
    cats = pd.Series(by_category.sums(self_ps), index=pd.Index(category_labels[by_category.order]))
    cats = cats.sort_index().sort_values(ascending=False)  # as a (sorted) group-by of the texts
    categories = pd.DataFrame({"category": cats.index.astype(str), "self_ms": cats.to_numpy() / 1e9,
                               "self_percent": 100 * cats.to_numpy() / total})

    rows = []
    modules = module_rows(host) if any(str(n).startswith("/device:") for n in ops.core_names) else None
    for code in ops.cores_in_order():  # each core's two time arrays, not a copy of its rows' every column
        core = str(ops.core_names[code])
        on_core = ops.core == code
        starts, ends = ops.start_ps[on_core], ops.end_ps(on_core)
        busy = union_ps(starts, ends)
        window = _core_window(host, core, starts, ends, modules)
        rows.append({"core": core, "busy_ms": busy / 1e9, "window_ms": window / 1e9,
                     "duty_cycle_percent": 100 * busy / max(window, 1)})
    per_core = pd.DataFrame(rows)
    duty = float((per_core["busy_ms"].sum() / max(per_core["window_ms"].sum(), 1e-12)) * 100)
    return DeviceOps(top, categories, per_core, duty, 100 - duty,
                     *_utilization(host, self_ps, flops_total, flops_known, ops),
                     programs=program_table(host, kinds=kinds, programs=of_op) if programs is None else programs,
                     kind_ms=kind_totals_ms(ops, kinds))


def _flops_by_row(ops, groups: Groups) -> tuple[np.ndarray, float, bool] | None:
    """(each group's FLOPs, their ``np.nansum`` over the ops, whether any op has a figure) from each metadata
    row's FLOPs and how many ops of each group have the row (``grouping.SumsByRow``: no per-op array), where the
    FLOPs are a metadata stat and a row's ops are of one group; None otherwise."""
    if "flops" in ops.events.columns or not ops.integer_kind("flops"):
        return None
    try:
        per_row = ops.host.metadata_stat("flops").to_numpy(np.float64, na_value=np.nan)
    except (TypeError, ValueError, OverflowError):
        return None
    by_row = SumsByRow.of(groups, ops.metadata_rows(), len(per_row))
    found = None if by_row is None else by_row.sums_and_total(per_row, missing=np.nan, nan_total=True)
    if by_row is None or found is None:
        return None
    return found[0], found[1], bool(np.isfinite(per_row[by_row.used]).any())


def op_name_ids(ops) -> tuple[np.ndarray, np.ndarray]:
    """Each op's name id and the names (object array): its ``hlo_op`` stat where it has one, else the
    short form of its event name (``%fusion.3 = ...`` -> ``fusion.3``); -1 where neither is known."""
    labels: dict[str, int] = {}

    def ids_of(coded) -> np.ndarray:
        table = np.full(len(coded.labels) + 1, -1, np.int32)
        for code, label in enumerate(coded.labels):
            table[code] = labels.setdefault(label, len(labels))
        return table.astype(code_dtype(len(labels) + 1))[coded.codes]

    short, short_labels = ops.coded("name").mapped(lambda n: n.split(" = ", 1)[0].lstrip("%"))
    ids = ids_of(Coded(short, short_labels))
    del short
    hlo_op = ops.coded("hlo_op")
    with_hlo_op = hlo_op.codes >= 0
    if with_hlo_op.any():
        ids = np.where(with_hlo_op, ids_of(hlo_op), ids)
    return ids, np.array(list(labels), dtype=object)


def _core_window(host, core: str, starts: np.ndarray, ends: np.ndarray, modules: np.ndarray | None) -> int:
    """The span the core was observed: its own first op start to last op end (xprof's per-core
    OpMetricsDb total), widened to the core's module events on TPU."""
    ev = host.events
    if core.startswith("/device:") and modules is not None and len(modules):
        mods = modules[Coded.of_stat(host, "plane_name", modules).isin({core})]
        if len(mods):
            mod_start = take(ev, "start_ps", mods)
            starts = np.r_[starts, mod_start]
            ends = np.r_[ends, mod_start + take(ev, "duration_ps", mods)]
    return int(ends.max() - starts.min()) if len(starts) else 0


def _utilization(host, self_ps: np.ndarray, flops_total: float, flops_known: bool,
                 ops) -> tuple[float | None, float | None, float | None]:
    """MXU and HBM utilisation from the device planes' stats; FLOP utilisation from the ops' FLOPs
    (``flops_total``: their sum, NaN skipped; ``flops_known``: whether any op has a figure)."""
    mxu = hbm = None
    for stats in host.plane_stats.values():
        if "matrix_unit_utilization_percent" in stats:
            mxu = float(stats["matrix_unit_utilization_percent"])
        if "hbm_utilization_percent" in stats:
            hbm = float(stats["hbm_utilization_percent"])
    flops_util = None
    peaks = [float(s["peak_teraflops_per_second"]) for s in host.plane_stats.values()
             if s.get("peak_teraflops_per_second")]
    busy_ps = float_total(self_ps) if self_ps is not ops.self_ps else ops.self_total_ps()
    if peaks and busy_ps > 0 and flops_known:
        n_cores = max(len(ops.cores_in_order()), 1)
        rate = flops_total / (busy_ps / 1e12 / n_cores) / n_cores
        flops_util = float(100 * rate / (peaks[0] * 1e12))
    return mxu, hbm, flops_util
