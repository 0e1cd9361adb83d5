"""Selecting and measuring events: the column helpers every analysis shares.

Everything here works on whole columns (numpy/pandas); nothing loops over events in Python.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

TPU_PLANE = re.compile(r"^/device:TPU:(\d+)$")
GPU_PLANE_PREFIX = "/device:GPU:"
HOST_PLANE = "/host:CPU"
TF_OP_NAME = r"^[A-Za-z0-9_./\-]+:[A-Z_][A-Za-z0-9_]*$"
# Lines on device planes that xprof derives from the op line (never count them as ops).
DERIVED_DEVICE_LINES = {
    "Steps", "XLA Modules", "Framework Ops", "Framework Name Scope", "TensorFlow Ops",
    "TensorFlow Name Scope", "Source code", "Host Offload Ops", "XLA TraceMe", "Overlay",
    "Async XLA Ops", "_counters_", "Launch Stats", "Sparse Core Steps", "Sparse Core Modules",
    "Tensor Core Sync Flag", "Sparse Core Syncs",
}


def column(frame: pd.DataFrame, name: str) -> pd.Series:
    """``frame[name]``, or an all-missing column when the capture has no such stat."""
    if name in frame.columns:
        return frame[name]
    return pd.Series(pd.NA, index=frame.index, dtype="object")


def mask(series: pd.Series) -> np.ndarray:
    """A writable numpy bool mask from a (possibly nullable) boolean Series."""
    return np.array(series.fillna(False).to_numpy(dtype=bool), dtype=bool)


def name_matches(frame: pd.DataFrame, pattern: str, col: str = "name") -> np.ndarray:
    values = column(frame, col)
    if isinstance(values.dtype, pd.CategoricalDtype):
        # Match each distinct name once, then map back (names repeat thousands of times).
        cats = values.cat.categories.astype(str)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "has match groups": we only test for a match
            hit = np.asarray(cats.str.contains(pattern, regex=True), dtype=bool)
        codes = values.cat.codes.to_numpy()
        return np.where(codes >= 0, hit[np.clip(codes, 0, None)], False) if len(cats) else np.zeros(len(values), bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mask(values.astype("string").str.contains(pattern, regex=True))


def text_equals(series: pd.Series, value: str) -> np.ndarray:
    """``series.astype(str) == value`` as a bool array, comparing each distinct category once
    instead of turning millions of rows into Python strings."""
    if not isinstance(series.dtype, pd.CategoricalDtype):
        return mask(series.astype(str) == value)
    hit = np.append(np.asarray(series.cat.categories.astype(str) == value, dtype=bool), False)
    return hit[series.cat.codes.to_numpy()]  # code -1 (missing: stays missing as text) takes the appended False


def text_in(series: pd.Series, values) -> np.ndarray:
    """Rows whose (non-missing) value is one of ``values``, decided once per distinct category."""
    if not isinstance(series.dtype, pd.CategoricalDtype):
        return mask(series.astype("string").isin(values))
    hit = np.append(np.asarray(series.cat.categories.astype(str).isin(list(values)), dtype=bool), False)
    return hit[series.cat.codes.to_numpy()]


def per_name(series: pd.Series, fn) -> np.ndarray:
    """``fn`` applied to each distinct value of a (categorical) column, spread back to all rows
    as an object array. Names repeat thousands of times; each string is worked on once."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        cats = series.cat.categories
        mapped = np.array([fn(str(c)) for c in cats] + [None], dtype=object)
        codes = series.cat.codes.to_numpy()
        return mapped[np.where(codes >= 0, codes, len(cats))]
    return np.array([None if v is None or v is pd.NA else fn(str(v)) for v in series], dtype=object)


def end_ps(frame: pd.DataFrame) -> np.ndarray:
    return frame["start_ps"].to_numpy(np.int64) + frame["duration_ps"].to_numpy(np.int64)


def device_kind(host) -> str:
    """"tpu", "gpu" or "cpu" (CPU: no device plane; XLA CPU thunks run on host threads)."""
    names = host.planes["plane_name"].astype(str)
    if names.str.match(TPU_PLANE.pattern).any():
        return "tpu"
    if names.str.startswith(GPU_PLANE_PREFIX).any():
        return "gpu"
    return "cpu"


def device_cores(host) -> list[str]:
    """Device plane names, each once (a file of joined XSpaces repeats a device's plane per copy)."""
    names = list(dict.fromkeys(str(n) for n in host.planes["plane_name"]))
    kind = device_kind(host)
    if kind == "tpu":
        return sorted((n for n in names if TPU_PLANE.match(n)), key=lambda n: int(TPU_PLANE.match(n).group(1)))
    if kind == "gpu":
        return sorted(n for n in names if n.startswith(GPU_PLANE_PREFIX))
    return ["cpu"]


def host_events(host) -> pd.DataFrame:
    ev = host.events
    return ev[mask(ev["plane_name"] == HOST_PLANE)]


def device_ops(host) -> pd.DataFrame:
    """Cached per host (several analyses need the same selection)."""
    cache = host.__dict__.setdefault("_analysis_cache", {})
    if "device_ops" not in cache:
        ops = _select_device_ops(host)
        ops["self_ps"] = self_time_ps(ops)
        cache["device_ops"] = ops
    return cache["device_ops"]


def _select_device_ops(host) -> pd.DataFrame:
    """Device op executions with ``core`` and ``self_ps`` columns.

    TPU: the ``XLA Ops`` line of each ``/device:TPU:N`` plane. GPU: the non-derived stream lines.
    CPU: host events that carry an ``hlo_op`` stat (XLA CPU thunks), minus the zero-length
    ``end: ...`` markers.
    """
    ev = host.events
    kind = device_kind(host)
    if kind == "tpu":
        sel = mask(ev["line_name"] == "XLA Ops") & name_matches(ev, TPU_PLANE.pattern, col="plane_name")
        ops = _device_timespans(host, _rows(ev, sel), ev, sel)
        ops["core"] = ops["plane_name"].astype(str)
    elif kind == "gpu":
        sel = name_matches(ev, "^" + re.escape(GPU_PLANE_PREFIX), col="plane_name")
        sel &= ~mask(ev["line_name"].isin(DERIVED_DEVICE_LINES))
        ops = _rows(ev, sel)
        ops["core"] = ops["plane_name"].astype(str)
    else:
        on_host = mask(ev["plane_name"] == HOST_PLANE)
        xla = column(ev, "hlo_op").notna().to_numpy() & ~name_matches(ev, r"^end: ")
        # TensorFlow executor ops ("scope/name:OpType") on the compute threads; tf.data's own
        # threads run input ops, which are not device work.
        tf_ops = name_matches(ev, TF_OP_NAME) & ~name_matches(ev, r"^tf_data", col="line_name")
        sel = on_host & (xla | tf_ops)
        ops = _rows(ev, sel)
        ops["core"] = "cpu"
    return ops


# What the device-op analyses read (device_ops, host_ops, input_bound, collectives, roofline, op table): the rows
# carry only these columns, not every stat of the capture (the selection is a fifth of a TPU capture).
DEVICE_OP_COLUMNS = ("plane_id", "line_id", "plane_name", "line_name", "metadata_id", "name", "start_ps",
                     "duration_ps", "hlo_category", "hlo_op", "tf_op", "program_id", "flops", "model_flops",
                     "bytes_accessed")


def _rows(ev: pd.DataFrame, sel: np.ndarray) -> pd.DataFrame:
    return ev.loc[sel, [c for c in DEVICE_OP_COLUMNS if c in ev.columns]]


def _device_timespans(host, ops: pd.DataFrame, ev: pd.DataFrame, sel: np.ndarray) -> pd.DataFrame:
    """Use the TPU's own clock for op times where the capture has it (``device_offset_ps`` and
    ``device_duration_ps`` of the selected events ``ev[sel]``, relative to the line's timestamp like
    ``offset_ps``), as xprof does: the host-synchronised offsets stretch and shrink identical program
    runs when clocks drift. The device-clock columns are read here and not kept on the op rows."""
    if "device_offset_ps" not in ev.columns or "device_duration_ps" not in ev.columns or ops.empty:
        return ops
    offset = ev["device_offset_ps"].array[sel]
    duration = ev["device_duration_ps"].array[sel]
    known = ~(pd.isna(offset) | pd.isna(duration))
    if not known.any():
        return ops
    origin_ns = int(getattr(host, "time_origin_ns", 0) or 0)
    line_ps = (_line_timestamps_ns(host.lines, ops, origin_ns) - origin_ns) * 1000
    device_start = line_ps + offset.to_numpy(dtype=np.int64, na_value=0)
    ops["start_ps"] = np.where(known, device_start, ops["start_ps"].to_numpy(np.int64))
    ops["duration_ps"] = np.where(known, duration.to_numpy(dtype=np.int64, na_value=0),
                                  ops["duration_ps"].to_numpy(np.int64))
    return ops


def _line_timestamps_ns(lines: pd.DataFrame, ops: pd.DataFrame, missing_ns: int) -> np.ndarray:
    """Each op's line ``timestamp_ns`` (``missing_ns`` where its line is not in ``lines``): looked up
    plane by plane in the few lines of each plane, not by joining millions of rows."""
    plane_of_op = ops["plane_id"].to_numpy(np.int64)
    line_of_op = ops["line_id"].to_numpy(np.int64)
    out = np.full(len(ops), missing_ns, dtype=np.int64)
    line_plane = lines["plane_id"].to_numpy(np.int64)
    line_id = lines["line_id"].to_numpy(np.int64)
    line_ts = lines["timestamp_ns"].to_numpy(np.int64)
    in_order = not len(plane_of_op) or bool(np.all(plane_of_op[1:] >= plane_of_op[:-1]))
    order = None if in_order else np.argsort(plane_of_op, kind="stable")
    sorted_planes = plane_of_op if order is None else plane_of_op[order]
    for plane in np.unique(sorted_planes):
        low, high = np.searchsorted(sorted_planes, [plane, plane + 1])
        rows = slice(low, high) if order is None else order[low:high]
        own = line_plane == plane
        ids, stamps = line_id[own], line_ts[own]
        by_id = np.argsort(ids, kind="stable")  # two lines with one id: the first one's timestamp
        ids, stamps = ids[by_id], stamps[by_id]
        wanted = line_of_op[rows]
        position = np.minimum(np.searchsorted(ids, wanted), max(len(ids) - 1, 0))
        found = ids[position] == wanted if len(ids) else np.zeros(len(wanted), bool)
        out[rows] = np.where(found, stamps[position] if len(ids) else missing_ns, missing_ns)
    return out


def self_time_ps(frame: pd.DataFrame) -> np.ndarray:
    """Self time of each event: its duration minus its direct children on the same line.

    Events are grouped by (plane, line); within a line, children are events that start inside a
    parent and end no later. Done with a stack walk over sorted arrays per line (lines are few).
    """
    out = frame["duration_ps"].to_numpy(np.int64).copy()
    if frame.empty:
        return out
    order = np.lexsort((-frame["duration_ps"].to_numpy(np.int64), frame["start_ps"].to_numpy(np.int64),
                        frame["line_id"].to_numpy(np.int64), frame["plane_id"].to_numpy(np.int64)))
    starts = frame["start_ps"].to_numpy(np.int64)[order]
    ends = starts + frame["duration_ps"].to_numpy(np.int64)[order]
    keys = frame["plane_id"].to_numpy(np.int64)[order] * (1 << 32) + frame["line_id"].to_numpy(np.int64)[order]
    # An event is nested when an earlier event of its line ends at or after its end. Lines without
    # any nesting (TPU XLA Ops, most CPU thunk lines) keep self time = duration: no walk needed.
    new_line = np.r_[True, keys[1:] != keys[:-1]]
    prev_max_end = _running_max_by_group(ends, new_line)
    nested = ~new_line & (prev_max_end >= ends) & (ends > starts)
    if not nested.any():
        return out
    lines_with_nesting = np.unique(keys[nested])
    walk = np.isin(keys, lines_with_nesting)
    idx = np.flatnonzero(walk)
    parent = np.full(len(starts), -1, dtype=np.int64)
    sub_parent = _parents(starts[idx], ends[idx], keys[idx])
    parent[idx] = np.where(sub_parent >= 0, idx[np.clip(sub_parent, 0, None)], -1)
    has_parent = parent >= 0
    child_dur = ends[has_parent] - starts[has_parent]
    np.subtract.at(out, order[parent[has_parent]], child_dur)
    return np.maximum(out, 0)


def _running_max_by_group(values: np.ndarray, group_start: np.ndarray) -> np.ndarray:
    """For each position, the max of the earlier values in its group (-1 at a group's first)."""
    shifted = np.r_[-1, values[:-1]]
    shifted[group_start] = -1
    group_id = np.cumsum(group_start)
    # Offset each group so one global running max never leaks across groups.
    offset = group_id.astype(np.float64) * (float(values.max()) + 2 if len(values) else 0.0)
    return (np.maximum.accumulate(shifted + offset) - offset).astype(np.int64)


def _parents(starts: np.ndarray, ends: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index (in the sorted arrays) of each event's direct parent, or -1."""
    parent = np.full(len(starts), -1, dtype=np.int64)
    stack: list[int] = []
    last_key = None
    # One pass over events; the stack depth is the nesting depth (small). Trees of TraceMe events
    # need a stack: there is no vectorised form that stays exact for arbitrary nesting.
    for i in range(len(starts)):
        key = keys[i]
        if key != last_key:
            stack.clear()
            last_key = key
        while stack and ends[stack[-1]] < ends[i] or (stack and starts[i] >= ends[stack[-1]]):
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return parent


def outermost(frame: pd.DataFrame) -> pd.DataFrame:
    """Drop events that lie inside an earlier event of the same name on the same line."""
    if frame.empty:
        return frame
    f = frame.sort_values(["plane_id", "line_id", "name", "start_ps"], kind="stable")
    starts = f["start_ps"].to_numpy(np.int64)
    ends = end_ps(f)
    group = f.groupby(["plane_id", "line_id", "name"], observed=True, sort=False).ngroup().to_numpy()
    prev_end = pd.Series(ends).groupby(group).cummax().shift(1).to_numpy()
    first = np.r_[True, group[1:] != group[:-1]]
    nested = ~first & (starts < np.nan_to_num(prev_end, nan=-1).astype(np.int64))
    return f[~nested].sort_values("start_ps", kind="stable")


def union_ps(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length of the union of intervals."""
    if len(starts) == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > run_end[:-1]]
    seg_start = s[new]
    seg_end = np.r_[run_end[np.flatnonzero(new)[1:] - 1], run_end[-1]]
    return int((seg_end - seg_start).sum())


def merged(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint (start, end) arrays."""
    if len(starts) == 0:
        return np.array([], np.int64), np.array([], np.int64)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > run_end[:-1]]
    idx = np.flatnonzero(new)
    return s[new], np.r_[run_end[idx[1:] - 1], run_end[-1]]


def overlap_ps(starts: np.ndarray, ends: np.ndarray, win_start: np.ndarray, win_end: np.ndarray) -> np.ndarray:
    """For each window, the time covered by the (merged) intervals inside it."""
    ms, me = merged(np.asarray(starts, np.int64), np.asarray(ends, np.int64))
    if len(ms) == 0:
        return np.zeros(len(win_start), np.int64)
    cum = np.r_[0, np.cumsum(me - ms)]

    def covered_until(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(ms, t, side="right")  # intervals starting at or before t
        full = cum[np.maximum(k - 1, 0)]
        partial = np.where(k > 0, np.minimum(t, me[np.maximum(k - 1, 0)]) - ms[np.maximum(k - 1, 0)], 0)
        return np.where(k > 0, full + np.maximum(partial, 0), 0)

    ws, we = np.asarray(win_start, np.int64), np.asarray(win_end, np.int64)
    return np.maximum(covered_until(we) - covered_until(ws), 0)


def capture_window_ps(host) -> tuple[int, int]:
    """First start and last end of any timed event (the profiled window as the file shows it)."""
    ev = host.events
    durations = ev["duration_ps"].to_numpy(np.int64)
    timed = durations > 0  # two columns, not a copy of the whole frame
    if not timed.any():
        return 0, 0
    starts = ev["start_ps"].to_numpy(np.int64)[timed]
    return int(starts.min()), int((starts + durations[timed]).max())
