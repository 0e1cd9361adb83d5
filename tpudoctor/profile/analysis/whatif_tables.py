"""The map of the straggler what-if: each host's collectives and step spans as a few rows per collective
(epoch nanoseconds), made where the host's events are (any executor, Dask included), for the combine in
``whatif`` to simulate."""

from __future__ import annotations

import numpy as np
import pandas as pd

COLLECTIVES_TABLE = "whatif_collectives"
STEPS_TABLE = "whatif_steps"
MAX_COLLECTIVE_ROWS = 50_000


def whatif_tables(host, steps, origin_ns: int | None = None) -> dict[str, list[dict]]:
    """Per collective (``step_index``, ``step_num``, ``core``, ``seq`` in the step, ``name``,
    ``start_at_ns``, ``end_at_ns``) and per step and core (``step_index``, ``step_num``, ``core``,
    ``start_at_ns``, ``end_at_ns``): what the combine simulates, epoch nanoseconds."""
    from tpudoctor.profile.analysis.collectives import (
        clock_origin_ns,
        collective_ops,
        megascale_events,
    )
    from tpudoctor.profile.analysis.device_op_rows import device_ops

    frame = steps.steps
    if frame.empty:
        return {}
    coll = collective_ops(device_ops(host))
    mega = megascale_events(host)
    if not mega.empty:
        coll = pd.concat([coll, mega], ignore_index=True)
    if coll.empty:
        return {}
    if origin_ns is None:
        origin_ns, _ = clock_origin_ns(host)
    return collective_records(frame, coll, int(origin_ns))


def collective_records(steps: pd.DataFrame, coll: pd.DataFrame, origin_ns: int = 0) -> dict[str, list[dict]]:
    """``whatif_tables`` from a ``StepSet.steps`` frame and ``collectives.collective_ops`` output."""
    step_core = steps["core"].astype(str).to_numpy()
    per_core_steps = set(step_core) - {"host"}
    step_num = steps.groupby("step_index")["step_num"].first()
    rows_c, rows_s = [], []
    for core, ops in coll.groupby("core", sort=True):
        rows = steps if not per_core_steps else steps[step_core == core]
        if rows.empty:
            rows = steps
        spans = rows.groupby("step_index", sort=True).agg(start_ps=("start_ps", "min"), end_ps=("end_ps", "max"))
        starts, ends = spans["start_ps"].to_numpy(np.int64), spans["end_ps"].to_numpy(np.int64)
        ops = ops.sort_values("start_ps", kind="stable")
        op_start = ops["start_ps"].to_numpy(np.int64)
        op_end = ops["end_ps"].to_numpy(np.int64)
        slot = np.searchsorted(starts, op_start, side="right") - 1
        inside = (slot >= 0) & (op_start < ends[np.clip(slot, 0, None)])
        if not inside.any():
            continue
        index = spans.index.to_numpy()[slot[inside]]
        seq = pd.Series(index).groupby(index).cumcount().to_numpy()
        names = ops["name"].astype(str).to_numpy()[inside]
        nums = step_num.reindex(index).to_numpy()
        for i, s, n, name, a, e in zip(index, seq, nums, names, op_start[inside], op_end[inside], strict=True):
            rows_c.append({"step_index": int(i), "step_num": None if pd.isna(n) else int(n), "core": str(core),
                           "seq": int(s), "name": name, "start_at_ns": origin_ns + int(a) // 1000,
                           "end_at_ns": origin_ns + int(e) // 1000})
        for i, a, e in zip(spans.index.to_numpy(), starts, ends, strict=True):
            n = step_num.get(i)
            rows_s.append({"step_index": int(i), "step_num": None if pd.isna(n) else int(n), "core": str(core),
                           "start_at_ns": origin_ns + int(a) // 1000, "end_at_ns": origin_ns + int(e) // 1000})
    if not rows_c:
        return {}
    return {COLLECTIVES_TABLE: rows_c[:MAX_COLLECTIVE_ROWS], STEPS_TABLE: rows_s}
