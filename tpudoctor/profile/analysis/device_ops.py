"""Device duty cycle, top ops by self time, and MXU/HBM figures where the capture has them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.events import (
    column,
    device_ops,
    end_ps,
    mask,
    per_name,
    union_ps,
)


@dataclasses.dataclass
class DeviceOps:
    """``top_ops``: ``name``, ``category``, ``count``, ``self_ms``, ``self_percent`` (of all op self
    time), ``flops_per_s`` where flops are known. ``per_core``: ``core``, ``busy_ms``, ``window_ms``,
    ``duty_cycle_percent``."""

    top_ops: pd.DataFrame
    categories: pd.DataFrame
    per_core: pd.DataFrame
    duty_cycle_percent: float
    idle_percent: float
    mxu_utilization_percent: float | None
    hbm_utilization_percent: float | None
    flops_utilization_percent: float | None


def analyze_device_ops(host, *, top_n: int = 15) -> DeviceOps:
    ops = device_ops(host)
    if ops.empty:
        empty = pd.DataFrame(columns=["name", "category", "count", "self_ms", "self_percent"])
        return DeviceOps(empty, pd.DataFrame(columns=["category", "self_ms", "self_percent"]),
                         pd.DataFrame(columns=["core", "busy_ms", "window_ms", "duty_cycle_percent"]),
                         0.0, 0.0, None, None, None)
    short = per_name(ops["name"], lambda n: n.split(" = ", 1)[0].lstrip("%"))
    hlo_op = per_name(column(ops, "hlo_op"), str)
    short = np.where(pd.isna(hlo_op), short, hlo_op)
    category = per_name(column(ops, "hlo_category"), str)
    category = np.where(pd.isna(category), "", category)
    frame = pd.DataFrame({"name": short, "category": category,
                          "self_ps": ops["self_ps"].to_numpy(np.float64),
                          "flops": pd.to_numeric(column(ops, "flops"), errors="coerce").to_numpy(np.float64)})
    total = max(frame["self_ps"].sum(), 1.0)
    g = frame.groupby(["name", "category"], sort=False).agg(count=("self_ps", "size"), self_ps=("self_ps", "sum"),
                                                            flops=("flops", "sum"))
    g = g.sort_values("self_ps", ascending=False).head(top_n).reset_index()
    top = pd.DataFrame({"name": g["name"], "category": g["category"], "count": g["count"].astype(int),
                        "self_ms": g["self_ps"] / 1e9, "self_percent": 100 * g["self_ps"] / total,
                        "flops_per_s": np.where(g["self_ps"] > 0, g["flops"] / (g["self_ps"] / 1e12), np.nan)})
    cats = frame.groupby("category")["self_ps"].sum().sort_values(ascending=False)
    categories = pd.DataFrame({"category": cats.index.astype(str), "self_ms": cats.to_numpy() / 1e9,
                               "self_percent": 100 * cats.to_numpy() / total})

    rows = []
    op_core = ops["core"].to_numpy()
    all_starts, all_ends = ops["start_ps"].to_numpy(np.int64), end_ps(ops)
    for core in pd.unique(op_core):  # each core's two time arrays, not a copy of its rows' every column
        on_core = op_core == core
        starts, ends = all_starts[on_core], all_ends[on_core]
        busy = union_ps(starts, ends)
        window = _core_window(host, core, starts, ends)
        rows.append({"core": core, "busy_ms": busy / 1e9, "window_ms": window / 1e9,
                     "duty_cycle_percent": 100 * busy / max(window, 1)})
    per_core = pd.DataFrame(rows)
    duty = float((per_core["busy_ms"].sum() / max(per_core["window_ms"].sum(), 1e-12)) * 100)
    return DeviceOps(top, categories, per_core, duty, 100 - duty, *_utilization(host, frame, ops))


def _core_window(host, core: str, starts: np.ndarray, ends: np.ndarray) -> int:
    """The span the core was observed: its own first op start to last op end (xprof's per-core
    OpMetricsDb total), widened to the core's module events on TPU."""
    ev = host.events
    if core.startswith("/device:"):
        mods = ev.loc[mask(ev["plane_name"] == core) & mask(ev["line_name"] == "XLA Modules"), ["start_ps", "duration_ps"]]
        if not mods.empty:
            starts = np.r_[starts, mods["start_ps"].to_numpy(np.int64)]
            ends = np.r_[ends, end_ps(mods)]
    return int(ends.max() - starts.min()) if len(starts) else 0


def _utilization(host, frame: pd.DataFrame, ops: pd.DataFrame) -> tuple[float | None, float | None, float | None]:
    mxu = hbm = None
    for stats in host.plane_stats.values():
        if "matrix_unit_utilization_percent" in stats:
            mxu = float(stats["matrix_unit_utilization_percent"])
        if "hbm_utilization_percent" in stats:
            hbm = float(stats["hbm_utilization_percent"])
    flops_util = None
    peaks = [float(s["peak_teraflops_per_second"]) for s in host.plane_stats.values()
             if s.get("peak_teraflops_per_second")]
    busy_ps = frame["self_ps"].sum()
    if peaks and busy_ps > 0 and np.isfinite(frame["flops"]).any():
        n_cores = max(ops["core"].nunique(), 1)
        rate = np.nansum(frame["flops"]) / (busy_ps / 1e12 / n_cores) / n_cores
        flops_util = float(100 * rate / (peaks[0] * 1e12))
    return mxu, hbm, flops_util
