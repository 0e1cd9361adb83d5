"""Selecting and measuring events: the column helpers every analysis shares.

Everything here works on whole columns (numpy/pandas); nothing loops over events in Python.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import warnings
from typing import Any

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


def _category_hits(categories: pd.Index, pattern: str) -> np.ndarray:
    """Which categories match ``pattern``, with a last ``False`` that code -1 (missing) indexes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "has match groups": we only test for a match
        hit = np.asarray(categories.astype(str).str.contains(pattern, regex=True), dtype=bool) \
            if len(categories) else np.zeros(0, bool)
    return np.append(hit, False)


def name_matches(frame: pd.DataFrame, pattern: str, col: str = "name") -> np.ndarray:
    values = column(frame, col)
    if isinstance(values.dtype, pd.CategoricalDtype):
        # Match each distinct name once, then map back (names repeat thousands of times).
        hits = _category_hits(values.cat.categories, pattern)
        return _rows_with_codes(values.array.codes, hits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mask(values.astype("string").str.contains(pattern, regex=True))


def text_equals(series: pd.Series, value: str) -> np.ndarray:
    """``series.astype(str) == value`` as a bool array, comparing each distinct category once
    instead of turning millions of rows into Python strings."""
    if not isinstance(series.dtype, pd.CategoricalDtype):
        return mask(series.astype(str) == value)
    hit = np.append(np.asarray(series.cat.categories.astype(str) == value, dtype=bool), False)
    return _rows_with_codes(series.array.codes, hit)  # code -1 (missing: stays missing as text) takes the appended False


def text_in(series: pd.Series, values) -> np.ndarray:
    """Rows whose (non-missing) value is one of ``values``, decided once per distinct category."""
    if not isinstance(series.dtype, pd.CategoricalDtype):
        return mask(series.astype("string").isin(values))
    hit = np.append(np.asarray(series.cat.categories.astype(str).isin(list(values)), dtype=bool), False)
    return _rows_with_codes(series.array.codes, hit)


def _rows_with_codes(codes: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """``hit[codes]`` (``hit`` has a last entry for code -1): one comparison per row where a single
    category hits, nothing where none does."""
    which = np.flatnonzero(hit)
    if not len(which):
        return np.zeros(len(codes), bool)
    if len(which) == 1 and which[0] < len(hit) - 1:
        return codes == which[0]
    return hit[codes]


class Coded:
    """A text column at some rows as integer codes (-1: missing) into ``labels`` (str): the rows are
    worked on as numbers and each distinct text once, never one Python string per row."""

    def __init__(self, codes: np.ndarray, labels: np.ndarray):
        self.codes = codes
        self.labels = labels  # object array of str, one per code

    @classmethod
    def of(cls, frame: pd.DataFrame, name: str, rows: np.ndarray | None = None) -> Coded:
        """``frame[name]`` (at ``rows``) coded; an all-missing column where the frame has none."""
        n = len(frame) if rows is None else len(rows)
        if name not in frame.columns:
            return cls(np.full(n, -1, np.int32), np.zeros(0, object))
        values = frame[name]
        if isinstance(values.dtype, pd.CategoricalDtype):
            codes = values.array.codes
            labels = np.array([str(c) for c in values.cat.categories], dtype=object)
            return cls(codes if rows is None else codes[rows], labels)
        values = values.array if rows is None else values.array.take(rows)
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        return cls(codes.astype(np.int32, copy=False), np.array([str(u) for u in uniques], dtype=object))

    def table(self, fn, missing=None) -> np.ndarray:
        """``fn(label)`` per code, with ``missing`` last (what code -1 indexes)."""
        return np.array([fn(label) for label in self.labels] + [missing], dtype=object)

    def hits(self, fn) -> np.ndarray:
        """Rows whose label passes ``fn`` (missing rows never do)."""
        table = np.fromiter((bool(fn(label)) for label in self.labels), dtype=bool, count=len(self.labels))
        return np.append(table, False)[self.codes]

    def matches(self, pattern: str) -> np.ndarray:
        return self.hits(re.compile(pattern).search)

    def isin(self, values) -> np.ndarray:
        wanted = set(values)
        return self.hits(lambda label: label in wanted)

    def mapped(self, fn, missing: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(codes, labels) of ``fn(label)`` per row: rows whose labels map to one text share a code;
        missing rows take the text ``missing``; ``fn`` returning None (and missing rows without
        ``missing``) give -1."""
        new_labels: dict[str, int] = {}
        table = np.full(len(self.labels) + 1, -1, np.int32)
        for code, label in enumerate(self.labels):
            value = fn(label)
            if value is not None:
                table[code] = new_labels.setdefault(value, len(new_labels))
        if missing is not None:
            table[-1] = new_labels.setdefault(missing, len(new_labels))
        return table[self.codes], np.array(list(new_labels), dtype=object)


CHUNK_ROWS = 1 << 20  # rows per pass where a whole-column temporary would cost hundreds of MB


class Groups:
    """Rows grouped by small integer keys (codes; a row with any key -1 is in no group), the groups in
    order of their first row, as a pandas group-by with ``sort=False`` orders them. Keys are combined
    into one dense number per row, so counting and summing are ``bincount``s, not hashing."""

    DENSE_LIMIT = 1 << 26

    def __init__(self, *keys: np.ndarray):
        n = len(keys[0])
        valid = np.ones(n, bool)
        dense = np.zeros(n, np.int32)
        size = 1
        for key in keys:
            key = np.asarray(key)
            valid &= key >= 0
            width = max(int(key.max()) + 1 if n else 1, 1)
            if size * width > self.DENSE_LIMIT:  # too many combinations for a table: renumber first
                dense[~valid] = -1
                codes, uniques = pd.factorize(dense)
                dense, size = codes.astype(np.int32), len(uniques)
            dense *= width
            dense += key  # rows with a key -1 are left out below
            size *= width
        self.valid = None if valid.all() else valid
        self.key = dense if self.valid is None else dense[valid]
        del dense
        self.size = size
        first = np.full(size, n, np.int64)
        valid_rows = None if self.valid is None else np.flatnonzero(valid)
        for low in range(0, len(self.key), CHUNK_ROWS):  # first row of each key, a chunk at a time
            chunk = self.key[low:low + CHUNK_ROWS]
            positions = np.arange(low, low + len(chunk)) if valid_rows is None else valid_rows[low:low + len(chunk)]
            np.minimum.at(first, chunk, positions)
        present = np.flatnonzero(first < n)
        self.order = present[np.argsort(first[present], kind="stable")]  # dense key of each group
        self.first_row = first[self.order]

    def __len__(self) -> int:
        return len(self.order)

    def counts(self) -> np.ndarray:
        return np.bincount(self.key, minlength=self.size)[self.order].astype(np.int64)

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Float sum of ``values`` per group (NaN skipped), as pandas' group-by sum gives it. Whole
        numbers whose sum stays below 2**52 add up exactly in any order: one ``bincount``. Other
        values go through pandas' own (compensated) sum in row order."""
        values = np.asarray(values)
        if self.valid is not None:
            values = values[self.valid]
        if values.dtype.kind in "iu":
            if exact_sum(values) is not None:
                return np.bincount(self.key, weights=values, minlength=self.size)[self.order]
            values = values.astype(np.float64)
        values = np.asarray(values, np.float64)
        missing = np.isnan(values)
        weights = np.where(missing, 0.0, values) if missing.any() else values
        del missing
        if exact_sum(weights) is not None:
            return np.bincount(self.key, weights=weights, minlength=self.size)[self.order]
        rank = np.full(self.size, -1, np.int64)
        rank[self.order] = np.arange(len(self.order))
        key = pd.Categorical.from_codes(rank[self.key], categories=pd.RangeIndex(len(self.order)))
        return pd.Series(values, copy=False).groupby(key, observed=False, sort=True).sum().to_numpy(np.float64)


def exact_sum(values: np.ndarray) -> float | None:
    """The sum of whole numbers (ints, or floats without fraction or NaN) when every partial sum stays
    below 2**52, so that any summation order gives it exactly; None otherwise."""
    total_abs = 0.0
    is_int = values.dtype.kind in "iu"
    for low in range(0, len(values), CHUNK_ROWS):
        chunk = values[low:low + CHUNK_ROWS]
        if not is_int and not np.array_equal(chunk, np.floor(chunk)):
            return None
        total_abs += float(np.abs(chunk).sum(dtype=np.float64))
        if total_abs >= 2.0 ** 52:
            return None
    return float(values.sum(dtype=np.int64 if is_int else np.float64))


def float_total(values: np.ndarray) -> float:
    """``pd.Series(values.astype(float)).sum()``, without the float copy where the sum is exact anyway."""
    exact = exact_sum(values) if values.dtype.kind in "iuf" else None
    if exact is not None:
        return exact
    return float(pd.Series(np.asarray(values, np.float64), copy=False).sum())


def first_rows(ids: np.ndarray, n_groups: int) -> np.ndarray:
    """Position of each group's first row."""
    first = np.full(n_groups, len(ids), np.int64)
    keep = np.flatnonzero(ids >= 0)
    np.minimum.at(first, ids[keep], keep)
    return first


def host_rows(host, pattern: str | None = None) -> np.ndarray:
    """Positions of the ``/host:CPU`` events (whose name matches ``pattern``) in ``host.events``."""
    ev = host.events
    if pattern is None:
        return np.flatnonzero(text_equals(ev["plane_name"], HOST_PLANE))
    rows = np.flatnonzero(name_matches(ev, pattern))  # the rarer test first, over the few matching rows the other
    return rows[Coded.of(ev, "plane_name", rows).isin({HOST_PLANE})]


def module_rows(host, core: str | None = None) -> np.ndarray:
    """Rows of the ``XLA Modules`` line events of the plane named ``core`` (of every plane: None)."""
    ev = host.events
    sel = text_equals(ev["line_name"], "XLA Modules")
    if core is not None:
        sel &= text_equals(ev["plane_name"], core)
    return np.flatnonzero(sel)


def take(frame: pd.DataFrame, name: str, rows: np.ndarray, dtype=np.int64) -> np.ndarray:
    """``frame[name]`` at ``rows`` as a numpy array of ``dtype`` (whatever the column's own dtype)."""
    series = frame[name]
    if isinstance(series.dtype, np.dtype):  # a numpy column: one gather, no intermediate array
        return series.to_numpy()[rows].astype(dtype, copy=False)
    return np.asarray(series.array.take(rows).to_numpy(dtype), dtype=dtype)


def rows_frame(frame: pd.DataFrame, rows: np.ndarray, columns) -> pd.DataFrame:
    """The given columns of ``frame`` at ``rows`` (a few columns of some rows, never every stat)."""
    return pd.DataFrame({c: frame[c].array.take(rows) for c in columns if c in frame.columns})


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


@dataclasses.dataclass
class DeviceOpRows:
    """The device op executions of a host: their rows in ``host.events`` and their own times.

    ``start_ps``/``duration_ps`` are the device clock's where the capture has it (TPU), else the
    event's; ``self_ps`` is the duration minus direct children on the same line. ``core`` codes
    each op's core into ``core_names``. Other columns are read at ``rows`` when needed (``coded``,
    ``values``): an analysis takes the few columns it reads, never a copy of every stat."""

    host: Any
    rows: np.ndarray
    start_ps: np.ndarray
    duration_ps: np.ndarray
    self_ps: np.ndarray
    core: np.ndarray
    core_names: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def empty(self) -> bool:
        return len(self.rows) == 0

    def end_ps(self, at: np.ndarray | None = None) -> np.ndarray:
        """End of every op (or of the ops at positions/mask ``at``)."""
        if at is None:
            return self.start_ps + self.duration_ps
        return self.start_ps[at] + self.duration_ps[at]

    @property
    def events(self) -> pd.DataFrame:
        return self.host.events

    def coded(self, name: str) -> Coded:
        return Coded.of(self.events, name, self.rows)

    def values(self, name: str):
        """The stat at the op rows (an all-missing object array where the capture has no such stat)."""
        values = self.host.stat_at(name, self.rows)
        if values is None:
            return pd.array(np.full(len(self.rows), pd.NA, dtype=object), dtype="object")
        return values

    def numbers(self, name: str) -> np.ndarray:
        """A numeric stat at the op rows as float64, NaN where missing or not a number."""
        if self._integer_kind(name):
            return self._gathered(name, np.float64, np.nan)
        values = self.values(name)
        return pd.to_numeric(pd.Series(values, copy=False), errors="coerce").to_numpy(np.float64)

    def whole_numbers(self, name: str) -> np.ndarray:
        """A numeric stat at the op rows with 0 where missing: int64 for a signed integer stat (exact,
        half the work of floats), else float64 (NaN and non-numbers as 0)."""
        if self._integer_kind(name) == "i":
            return self._gathered(name, np.int64, 0)
        numbers = self.numbers(name)
        return np.where(np.isnan(numbers), 0.0, numbers)

    def _integer_kind(self, name: str) -> str | None:
        """'i'/'u' for a nullable integer stat ('f' for a nullable float one), None otherwise."""
        if name in self.events.columns:
            column = self.events[name].array
            if isinstance(column, pd.arrays.IntegerArray | pd.arrays.FloatingArray):
                return column.dtype.kind
            return None
        return "i" if name in self.host.metadata_stats else None  # read from the metadata as Int64

    def _gathered(self, name: str, dtype, missing) -> np.ndarray:
        """A nullable stat at the op rows as numpy, a chunk of rows at a time (no second copy)."""
        out = np.empty(len(self.rows), dtype)
        for low in range(0, len(self.rows), CHUNK_ROWS):
            chunk = self.host.stat_at(name, self.rows[low:low + CHUNK_ROWS])
            out[low:low + CHUNK_ROWS] = chunk.to_numpy(dtype, na_value=missing)
        return out

    def cores_in_order(self) -> list[int]:
        """Core codes in order of each core's first op."""
        if not hasattr(self, "_cores_in_order"):
            self._cores_in_order = [int(c) for c in pd.unique(self.core)]
        return self._cores_in_order

    def code_of_core(self, core: str) -> int:
        """The code of a core name (-1 when no device plane has that name)."""
        hit = np.flatnonzero(self.core_names == core)
        return int(hit[0]) if len(hit) else -1


_SHARED = "_shared_device_ops"


@contextlib.contextmanager
def sharing_device_ops(host):
    """Within this block ``device_ops(host)`` selects the host's device ops once for every analysis;
    the selection is dropped when the block ends, so nothing per event stays on the host."""
    if _SHARED in host.__dict__:  # an enclosing block shares already
        yield
        return
    host.__dict__[_SHARED] = None
    try:
        yield
    finally:
        host.__dict__.pop(_SHARED, None)


def device_ops(host) -> DeviceOpRows:
    """The host's device ops (selected once per ``sharing_device_ops`` block, else on each call)."""
    shared = host.__dict__.get(_SHARED, False)
    if shared is not False and shared is not None:
        return shared
    ops = _select_device_ops(host)
    if shared is None:
        host.__dict__[_SHARED] = ops
    return ops


def _select_device_ops(host) -> DeviceOpRows:
    """Device op executions with their core and self time.

    TPU: the ``XLA Ops`` line of each ``/device:TPU:N`` plane. GPU: the non-derived stream lines.
    CPU: host events that carry an ``hlo_op`` stat (XLA CPU thunks), minus the zero-length
    ``end: ...`` markers.
    """
    ev = host.events
    kind = device_kind(host)
    if kind == "tpu":
        sel = text_equals(ev["line_name"], "XLA Ops") & name_matches(ev, TPU_PLANE.pattern, col="plane_name")
    elif kind == "gpu":
        sel = name_matches(ev, "^" + re.escape(GPU_PLANE_PREFIX), col="plane_name")
        sel &= ~text_in(ev["line_name"], DERIVED_DEVICE_LINES)
    else:
        on_host = text_equals(ev["plane_name"], HOST_PLANE)
        xla = column(ev, "hlo_op").notna().to_numpy() & ~name_matches(ev, r"^end: ")
        # TensorFlow executor ops ("scope/name:OpType") on the compute threads; tf.data's own
        # threads run input ops, which are not device work.
        tf_ops = name_matches(ev, TF_OP_NAME) & ~name_matches(ev, r"^tf_data", col="line_name")
        sel = on_host & (xla | tf_ops)
    rows = np.flatnonzero(sel)
    del sel
    if len(ev) < 2**31:
        rows = rows.astype(np.int32)
    if kind == "cpu":
        core, core_names = np.zeros(len(rows), np.int8), np.array(["cpu"], dtype=object)
    else:
        planes = Coded.of(ev, "plane_name", rows)
        core, core_names = planes.codes, planes.labels
    start, duration, self_ps = _op_times(host, rows, device_clock=kind == "tpu")
    return DeviceOpRows(host, rows, start, duration, self_ps, core, core_names)


OP_CHUNK = 1 << 18  # ops whose times are worked out together (whole lines): bounds the temporaries


def _op_times(host, rows: np.ndarray, *, device_clock: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start, duration and self time of the ops at ``rows``, worked out a piece of whole lines at a
    time (a line's ops are adjacent, as the events are stored), so that no temporary is as long as
    all the ops of a big capture. Self time is the duration array itself where nothing nests."""
    ev = host.events
    n = len(rows)
    start = np.empty(n, np.int64)
    duration = np.empty(n, np.int64)
    pieces = []
    for low, high in _line_pieces(ev, rows):
        chunk = rows[low:high]
        plane, line = take(ev, "plane_id", chunk), take(ev, "line_id", chunk)
        chunk_start, chunk_duration = take(ev, "start_ps", chunk), take(ev, "duration_ps", chunk)
        if device_clock:
            chunk_start, chunk_duration = _device_timespans(host, chunk, plane, line, chunk_start, chunk_duration)
        start[low:high] = chunk_start
        duration[low:high] = chunk_duration
        own = _self_time(plane, line, chunk_start, chunk_duration)
        pieces.append((low, high, None if own is chunk_duration else own))
        del plane, line, chunk_start, chunk_duration, own
    if all(own is None for _, _, own in pieces):
        return start, duration, duration
    self_ps = duration.copy()
    for low, high, own in pieces:
        if own is not None:
            self_ps[low:high] = own
    return start, duration, self_ps


def _line_pieces(ev: pd.DataFrame, rows: np.ndarray) -> list[tuple[int, int]]:
    """Ranges of ``rows`` of about ``OP_CHUNK`` that cut only between lines; one range when a line's
    rows are not all adjacent (then no cut is safe)."""
    n = len(rows)
    if n <= OP_CHUNK:
        return [(0, n)]
    changes = []
    last = None
    for low in range(0, n, OP_CHUNK):
        chunk = rows[low:low + OP_CHUNK]
        plane, line = take(ev, "plane_id", chunk), take(ev, "line_id", chunk)
        if last is not None:
            plane, line = np.r_[last[0], plane], np.r_[last[1], line]
        later_plane = plane[1:] > plane[:-1]
        same_plane = plane[1:] == plane[:-1]
        if np.any(~later_plane & ~same_plane) or np.any(same_plane & (line[1:] < line[:-1])):
            return [(0, n)]  # lines not in (plane, line) order: a line's rows may be apart
        offset = low if last is None else low - 1
        changes.append(np.flatnonzero(later_plane | (line[1:] != line[:-1])) + 1 + offset)
        last = (plane[-1], line[-1])
    cuts = np.concatenate(changes)
    pieces, low = [], 0
    while low < n:
        at = np.searchsorted(cuts, low + OP_CHUNK)
        high = int(cuts[at]) if at < len(cuts) else n
        pieces.append((low, high))
        low = high
    return pieces


def _device_timespans(host, rows: np.ndarray, plane: np.ndarray, line: np.ndarray, start: np.ndarray,
                      duration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Use the TPU's own clock for op times where the capture has it (``device_offset_ps`` and
    ``device_duration_ps`` of the events at ``rows``, relative to the line's timestamp like
    ``offset_ps``), as xprof does: the host-synchronised offsets stretch and shrink identical program
    runs when clocks drift."""
    ev = host.events
    if "device_offset_ps" not in ev.columns or "device_duration_ps" not in ev.columns or not len(rows):
        return start, duration
    offset = ev["device_offset_ps"].array.take(rows)
    device_duration = ev["device_duration_ps"].array.take(rows)
    known = ~(pd.isna(offset) | pd.isna(device_duration))
    if not known.any():
        return start, duration
    origin_ns = int(getattr(host, "time_origin_ns", 0) or 0)
    line_ps = (_line_timestamps_ns(host.lines, plane, line, origin_ns) - origin_ns) * 1000
    line_ps += offset.to_numpy(dtype=np.int64, na_value=0)
    start = np.where(known, line_ps, start)
    del line_ps, offset
    duration = np.where(known, device_duration.to_numpy(dtype=np.int64, na_value=0), duration)
    return start, duration


def _line_timestamps_ns(lines: pd.DataFrame, plane_of_op: np.ndarray, line_of_op: np.ndarray,
                        missing_ns: int) -> np.ndarray:
    """Each op's line ``timestamp_ns`` (``missing_ns`` where its line is not in ``lines``): looked up
    plane by plane in the few lines of each plane, not by joining millions of rows."""
    plane_of_op = np.asarray(plane_of_op, np.int64)
    line_of_op = np.asarray(line_of_op, np.int64)
    out = np.full(len(plane_of_op), missing_ns, dtype=np.int64)
    line_plane = lines["plane_id"].to_numpy(np.int64)
    line_id = lines["line_id"].to_numpy(np.int64)
    line_ts = lines["timestamp_ns"].to_numpy(np.int64)
    in_order = not len(plane_of_op) or bool(np.all(plane_of_op[1:] >= plane_of_op[:-1]))
    order = None if in_order else np.argsort(plane_of_op, kind="stable")
    sorted_planes = plane_of_op if order is None else plane_of_op[order]
    starts_of_planes = np.r_[True, sorted_planes[1:] != sorted_planes[:-1]] if len(sorted_planes) else np.zeros(0, bool)
    for plane in sorted_planes[starts_of_planes]:  # each plane once (sorted: no hashing)
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
    return np.array(_self_time(frame["plane_id"].to_numpy(np.int64), frame["line_id"].to_numpy(np.int64),
                               frame["start_ps"].to_numpy(np.int64), frame["duration_ps"].to_numpy(np.int64)))


def _self_time(plane: np.ndarray, line: np.ndarray, start: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """``self_time_ps`` of events given as arrays. Where the events already come in (plane, line,
    start, longest first) order, as a line's events are stored, no sort and no copy is made, and
    lines without nesting give the durations themselves."""
    if not len(start):
        return duration.copy()
    plane = np.asarray(plane, np.int64)
    line = np.asarray(line, np.int64)
    keys = plane * (1 << 32) + line
    order = None if _in_line_order(keys, start, duration) else _line_order(plane, line, keys, start, duration)
    if order is not None:
        keys, starts, durations = keys[order], start[order], duration[order]
    else:
        starts, durations = start, duration
    ends = starts + durations
    new_line = np.r_[True, keys[1:] != keys[:-1]]
    parent = _direct_parents(starts, ends, new_line)
    has_parent = parent >= 0
    if not has_parent.any():  # no nesting (TPU XLA Ops lines mostly): self time = duration, no copy
        return duration
    out = duration.copy()
    child_dur = ends[has_parent] - starts[has_parent]
    target = parent[has_parent] if order is None else order[parent[has_parent]]
    np.subtract.at(out, target, child_dur)
    return np.maximum(out, 0)


def _direct_parents(starts: np.ndarray, ends: np.ndarray, new_line: np.ndarray) -> np.ndarray:
    """Index of each event's direct parent in arrays sorted by (line, start, longest first), or -1.

    The parent is what a stack walk over the line finds: the nearest earlier event of the line that
    ends at or after the event's end and after its start. Found for all events at once by pointer
    jumping: an event that is not the parent sends the search to its own parent (or its own current
    candidate), since every event in between ends too early as well. A few rounds (about the nesting
    depth) over the nested events only, instead of a Python loop over every event."""
    need = np.maximum(ends, starts + 1)  # the end a parent must reach
    parent = np.full(len(starts), -1, np.int64)
    todo = np.flatnonzero(_running_max_by_group(ends, new_line) >= need)  # events that have a parent
    if not len(todo):
        return parent
    pointer = np.arange(-1, len(starts) - 1, dtype=np.int64)  # everything between pointer[k] and k ends too early
    cand = todo - 1
    while len(todo):
        ok = ends[cand] >= need[todo]
        parent[todo[ok]] = cand[ok]
        pointer[todo[ok]] = cand[ok]
        todo, cand = todo[~ok], cand[~ok]
        cand = pointer[cand]
        alive = cand >= 0  # never false for an event that has a parent; kept so no search runs past a line
        todo, cand = todo[alive], cand[alive]
        pointer[todo] = cand
    return parent


def _line_order(plane: np.ndarray, line: np.ndarray, keys: np.ndarray, start: np.ndarray,
                duration: np.ndarray) -> np.ndarray:
    """The order that sorts events by (plane, line, start, longest first). Events stored line after
    line and nearly in time order (device clock times) take one stable sort of a single integer key,
    which is close to linear on nearly sorted data; anything else a full lexsort."""
    if not np.any(keys[1:] < keys[:-1]):
        line_index = np.cumsum(np.r_[True, keys[1:] != keys[:-1]]) - 1
        low = int(start.min())
        span = int(start.max()) - low + 1
        if span * (int(line_index[-1]) + 1) < 2**62:
            order = np.argsort(line_index * span + (start - low), kind="stable")
            if _in_line_order(keys[order], start[order], duration[order]):
                return order
    return np.lexsort((-duration, start, line, plane))


def _in_line_order(keys: np.ndarray, start: np.ndarray, duration: np.ndarray) -> bool:
    """Are the events sorted by (line key, start, longest first) already?"""
    same_line = keys[1:] == keys[:-1]
    if np.any(keys[1:] < keys[:-1]):
        return False
    step = start[1:] - start[:-1]
    if np.any(same_line & (step < 0)):
        return False
    ties = same_line & (step == 0)
    return not np.any(ties & (duration[1:] > duration[:-1]))


def _running_max_by_group(values: np.ndarray, group_start: np.ndarray) -> np.ndarray:
    """For each position, the max of the earlier values in its group (-1 at a group's first).
    Groups are runs of positions; ``values`` are non-negative integers (times)."""
    values = np.asarray(values, np.int64)
    shifted = np.empty(len(values), np.int64)
    shifted[:1] = -1
    shifted[1:] = values[:-1]
    shifted[group_start] = -1
    if not len(values):
        return shifted
    group_id = np.cumsum(group_start) - 1
    low = min(int(values.min()), 0)
    span = int(values.max()) - low + 2
    if span * (int(group_id[-1]) + 1) < 2**62:
        # each group lifted above the previous ones, so one running max never leaks across groups
        offset = group_id * span - low
        shifted += offset
        np.maximum.accumulate(shifted, out=shifted)
        shifted -= offset
        return shifted
    return pd.Series(shifted).groupby(group_id).cummax().to_numpy(np.int64)


def outermost(frame: pd.DataFrame) -> pd.DataFrame:
    """Drop events that lie inside an earlier event of the same name on the same line (ordered by start)."""
    if frame.empty:
        return frame
    return frame.iloc[_outermost_positions(frame, np.arange(len(frame)))]


def outermost_rows(events: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """``outermost`` of the events at ``rows``, as their rows (by start): reads four columns of
    those rows, copies no frame."""
    return rows[_outermost_positions(events, rows)] if len(rows) else rows


def _outermost_positions(frame: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    plane = take(frame, "plane_id", rows)
    line = take(frame, "line_id", rows)
    start = take(frame, "start_ps", rows)
    end = start + take(frame, "duration_ps", rows)
    names = frame["name"]
    if isinstance(names.dtype, pd.CategoricalDtype):  # sorted as pandas sorts a categorical: by code
        name = names.array.codes[rows].astype(np.int64)
    else:
        name = pd.factorize(names.array.take(rows), sort=True, use_na_sentinel=True)[0].astype(np.int64)
    unnamed = np.iinfo(np.int64).max
    name[name < 0] = unnamed  # missing names last, as pandas sorts them
    order = np.lexsort((start, name, line, plane))
    plane, line, name, start, end = plane[order], line[order], name[order], start[order], end[order]
    new_group = np.r_[True, (plane[1:] != plane[:-1]) | (line[1:] != line[:-1]) | (name[1:] != name[:-1])]
    # an event without a name has no name to be nested in: always kept
    nested = ~new_group & (start < _running_max_by_group(end, new_group)) & (name != unnamed)
    kept = order[~nested]
    return kept[np.argsort(start[~nested], kind="stable")]


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
    durations = ev["duration_ps"].to_numpy()
    starts = ev["start_ps"].to_numpy()
    first, last = None, None
    for low in range(0, len(durations), CHUNK_ROWS):  # bounded temporaries on big captures
        duration = np.asarray(durations[low:low + CHUNK_ROWS], np.int64)
        timed = duration > 0
        if not timed.any():
            continue
        start = np.asarray(starts[low:low + CHUNK_ROWS], np.int64)[timed]
        chunk_first, chunk_last = int(start.min()), int((start + duration[timed]).max())
        first = chunk_first if first is None else min(first, chunk_first)
        last = chunk_last if last is None else max(last, chunk_last)
    return (0, 0) if first is None else (first, last)
