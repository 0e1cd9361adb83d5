"""Which ops changed between two captures: added, removed, slower, faster, and the top movers.

Works on per-op tables (``op_table`` makes one from a host; any frame with the same columns will
do): one row per (program, op name), matched across the two captures by both, as the same HLO op
name means the same op only inside one compiled program. Time is compared per step when the step
counts are given, so a longer capture of the same job does not look slower. TPU tables also carry
the roofline's FLOP rate and bandwidth, and the diff gives their deltas.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.device_op_rows import device_ops
from tpudoctor.profile.analysis.device_ops import op_name_ids
from tpudoctor.profile.analysis.events import device_kind
from tpudoctor.profile.analysis.grouping import Groups
from tpudoctor.profile.analysis.programs import op_programs

KEY = ["program_id", "op_name"]
RATE_COLUMNS = ("flop_rate_flops_per_s", "hbm_bw_bytes_per_s", "memory_bw_bytes_per_s")
SLOWER_FASTER_PERCENT = 5.0  # an op's average time must move by more than this to be slower/faster
TOP_MOVERS = 10


@dataclasses.dataclass
class OpDiff:
    """DataFrames with one row per op; columns ``program_id``, ``program``, ``op_name``, ``category``,
    ``status`` (added, removed, slower, faster, same), ``baseline_*``/``candidate_*`` for
    ``occurrences``, ``time_ps`` (total, or per step when step counts were given) and
    ``avg_time_ps``, then ``delta_time_ps``, ``delta_avg_time_percent`` and, for TPU tables,
    ``baseline_``/``candidate_``/``delta_`` of each rate in ``RATE_COLUMNS``.
    ``movers`` holds the ``top_n`` ops with the largest absolute ``delta_time_ps``."""

    ops: pd.DataFrame
    added: pd.DataFrame
    removed: pd.DataFrame
    slower: pd.DataFrame
    faster: pd.DataFrame
    movers: pd.DataFrame
    time_basis: str
    """"per-step" or "total"."""
    baseline_time_ps: float
    candidate_time_ps: float

    def to_dict(self, *, max_rows: int = 50) -> dict:
        """Plain data for a JSON document: totals, counts and up to ``max_rows`` ops per class."""
        def rows(frame: pd.DataFrame) -> list[dict]:
            return [{k: (None if isinstance(v, float) and not np.isfinite(v) else v.item() if hasattr(v, "item")
                         else v) for k, v in r.items()} for r in frame.head(max_rows).to_dict(orient="records")]

        return {
            "time_basis": self.time_basis, "baseline_time_ps": self.baseline_time_ps,
            "candidate_time_ps": self.candidate_time_ps,
            "counts": {name: len(getattr(self, name)) for name in ("added", "removed", "slower", "faster")},
            **{name: rows(getattr(self, name)) for name in ("movers", "added", "removed", "slower", "faster")},
        }


OP_TABLE_COLUMNS = ("program_id", "program", "op_name", "category", "occurrences", "total_time_ps", "self_time_ps",
                    *RATE_COLUMNS)


def op_table(host, roofline=None) -> pd.DataFrame:
    """Per-op table of one host: ``program_id`` (str), ``program`` (the HLO module's name; '' for
    device work of no program), ``op_name``, ``category``, ``occurrences``, ``total_time_ps``,
    ``self_time_ps``; TPU hosts add the roofline's rates (``RATE_COLUMNS``). ``roofline``: the
    host's ``Roofline`` where already computed."""
    ops = device_ops(host)
    programs = op_programs(ops)
    name_of = dict(zip(programs.ids, programs.names, strict=True))
    if device_kind(host) == "tpu":
        from tpudoctor.profile.analysis.roofline import analyze_roofline

        roofline = roofline if roofline is not None else analyze_roofline(host)
        if roofline is not None:
            table = roofline.ops.copy()
            table["program_id"] = table["program_id"].astype(str)
            table["program"] = [name_of.get(pid, "") for pid in table["program_id"]]
            return table[list(OP_TABLE_COLUMNS)]
    name_ids, name_labels = op_name_ids(ops)  # ops without a name are left out (-1)
    program_ids, program_labels = ops.coded("program_id").mapped(str, missing="")
    category_ids, categories = ops.coded("hlo_category").mapped(str, missing="")
    groups = Groups(program_ids, name_ids)
    first = groups.first_row
    table = pd.DataFrame({
        "program_id": program_labels[program_ids[first]],
        "program": [name_of.get(pid, "") for pid in program_labels[program_ids[first]]],
        "op_name": name_labels[name_ids[first]],
        "category": categories[category_ids[first]], "occurrences": groups.counts(),
        "total_time_ps": groups.sums(ops.duration_ps), "self_time_ps": groups.sums(ops.self_ps),
    })
    return table.sort_values("total_time_ps", ascending=False, kind="stable").reset_index(drop=True)


def diff_ops(baseline: pd.DataFrame, candidate: pd.DataFrame, *, baseline_steps: int | None = None,
             candidate_steps: int | None = None, top_n: int = TOP_MOVERS,
             slower_faster_percent: float = SLOWER_FASTER_PERCENT) -> OpDiff:
    """Diff two per-op tables (``op_table``). Give both step counts to compare time per step."""
    per_step = bool(baseline_steps) and bool(candidate_steps)
    scale_a = 1.0 / baseline_steps if per_step else 1.0
    scale_b = 1.0 / candidate_steps if per_step else 1.0
    rates = [c for c in RATE_COLUMNS if c in baseline.columns and c in candidate.columns]
    keep = [*KEY, "program", "category", "occurrences", "total_time_ps", *rates]
    merged = _keyed(baseline)[keep].merge(_keyed(candidate)[keep], on=KEY, how="outer",
                                          suffixes=("_a", "_b"), indicator=True)
    out = pd.DataFrame({"program_id": merged["program_id"],
                        "program": merged["program_b"].fillna(merged["program_a"]).fillna(""), "op_name": merged["op_name"],
                        "category": merged["category_b"].fillna(merged["category_a"]).fillna("")})
    for side, scale, tag in (("baseline", scale_a, "_a"), ("candidate", scale_b, "_b")):
        occurrences = merged[f"occurrences{tag}"].fillna(0).to_numpy(np.float64)
        total = merged[f"total_time_ps{tag}"].fillna(0).to_numpy(np.float64)
        out[f"{side}_occurrences"] = occurrences.astype(np.int64)
        out[f"{side}_time_ps"] = total * scale
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"{side}_avg_time_ps"] = np.where(occurrences > 0, total / occurrences, np.nan)
    out["delta_time_ps"] = out["candidate_time_ps"] - out["baseline_time_ps"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["delta_avg_time_percent"] = 100 * (out["candidate_avg_time_ps"] / out["baseline_avg_time_ps"] - 1)
    for rate in rates:
        out[f"baseline_{rate}"] = merged[f"{rate}_a"].to_numpy(np.float64)
        out[f"candidate_{rate}"] = merged[f"{rate}_b"].to_numpy(np.float64)
        out[f"delta_{rate}"] = out[f"candidate_{rate}"] - out[f"baseline_{rate}"]
    side = merged["_merge"].astype(str).to_numpy()
    change = out["delta_avg_time_percent"].to_numpy(np.float64)
    status = np.select(
        [side == "right_only", side == "left_only", change > slower_faster_percent, change < -slower_faster_percent],
        ["added", "removed", "slower", "faster"], "same")
    out["status"] = status
    order = np.argsort(-np.abs(out["delta_time_ps"].to_numpy(np.float64)), kind="stable")
    out = out.iloc[order].reset_index(drop=True)

    def having(name: str) -> pd.DataFrame:
        return out[out["status"] == name].reset_index(drop=True)

    movers = out[out["delta_time_ps"] != 0].head(top_n).reset_index(drop=True)
    return OpDiff(ops=out, added=having("added"), removed=having("removed"), slower=having("slower"),
                  faster=having("faster"), movers=movers, time_basis="per-step" if per_step else "total",
                  baseline_time_ps=float(out["baseline_time_ps"].sum()),
                  candidate_time_ps=float(out["candidate_time_ps"].sum()))


def combine_op_tables(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Several hosts' op tables as one: times and occurrences summed, rates averaged over hosts;
    heaviest first."""
    frames = [t for t in tables if t is not None and not t.empty]
    if not frames:
        return pd.DataFrame(columns=list(OP_TABLE_COLUMNS))
    merged = _keyed(pd.concat(frames, ignore_index=True), sum_columns=("occurrences", "total_time_ps", "self_time_ps"))
    return merged.sort_values(["total_time_ps", "op_name"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _keyed(table: pd.DataFrame, sum_columns=("occurrences", "total_time_ps")) -> pd.DataFrame:
    """One row per (program_id, op_name), keys as strings, whatever the caller's table looked like."""
    frame = table.copy()
    frame["program_id"] = frame["program_id"].astype(str)
    frame["op_name"] = frame["op_name"].astype(str)
    if "category" not in frame.columns:
        frame["category"] = ""
    if "program" not in frame.columns:  # a table saved before 2.2
        frame["program"] = ""
    if frame.duplicated(KEY).any():
        sums = {c: (c, "sum") for c in sum_columns if c in frame.columns}
        means = {c: (c, "mean") for c in RATE_COLUMNS if c in frame.columns}
        frame = frame.groupby(KEY, sort=False).agg(program=("program", "first"), category=("category", "first"),
                                                   **sums, **means).reset_index()
    return frame
