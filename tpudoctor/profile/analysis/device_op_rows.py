"""The device op executions of one host: their rows in ``host.events`` and their own times,
selected once per host (``sharing_device_ops``) for every analysis that reads them."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from typing import Any

import numpy as np
import pandas as pd

from tpudoctor.captures.xspace.columns import LINE_COLUMNS
from tpudoctor.captures.xspace.lookup import code_dtype
from tpudoctor.profile.analysis.events import (
    DERIVED_DEVICE_LINES,
    GPU_PLANE_PREFIX,
    HOST_PLANE,
    TF_OP_NAME,
    TPU_PLANE,
    device_kind,
    name_matches,
    named_lines,
    plane_lines,
    take,
    whole_lines,
)
from tpudoctor.profile.analysis.grouping import (
    CHUNK_ROWS,
    FACTORIZE_ROWS,
    Coded,
    Factorizer,
    float_total,
)
from tpudoctor.profile.analysis.nesting import line_self_time, self_time_arrays


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
    memo: dict = dataclasses.field(default_factory=dict, repr=False)
    """Figures per op that several analyses read (``programs.op_kinds``, ``programs.op_programs``),
    made once for this selection."""
    spans: tuple[np.ndarray, np.ndarray] | None = None
    """(first row, row count) of each run of adjacent rows the ops are, in their order, where they are whole
    lines (a TPU's ``XLA Ops`` lines): columns are then read at the ops as slices, not gathered row by row."""

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def empty(self) -> bool:
        return len(self.rows) == 0

    def self_total_ps(self) -> float:
        """``float_total(self_ps)``: every op's self time together, summed once for the analyses that read it."""
        if "self_total_ps" not in self.memo:
            self.memo["self_total_ps"] = float_total(self.self_ps)
        return self.memo["self_total_ps"]

    def end_ps(self, at: np.ndarray | None = None) -> np.ndarray:
        """End of every op (or of the ops at positions/mask ``at``)."""
        if at is None:
            return self.start_ps + self.duration_ps
        return self.start_ps[at] + self.duration_ps[at]

    @property
    def events(self) -> pd.DataFrame:
        return self.host.events

    def coded(self, name: str) -> Coded:
        if name in LINE_COLUMNS:
            return Coded.of_stat(self.host, name, self.rows)
        column = self.events[name] if name in self.events.columns else None
        if self.spans is not None and column is not None and isinstance(column.dtype, pd.CategoricalDtype):
            return Coded(self.at(column.array.codes), np.array([str(c) for c in column.cat.categories], dtype=object))
        sparse = self.host.sparse_stats.get(name)
        if self.spans is not None and sparse is not None and sparse.is_text:  # its codes read span by span
            codes = np.empty(len(self.rows), sparse.codes.dtype)
            low = 0
            for first, count in zip(self.spans[0].tolist(), self.spans[1].tolist(), strict=True):
                codes[low:low + count] = sparse.codes_between(first, first + count)
                low += count
            return Coded(codes, np.array([str(c) for c in sparse.values], dtype=object))
        return Coded.of_stat(self.host, name, self.rows)

    def at(self, values: np.ndarray) -> np.ndarray:
        """``values[self.rows]`` of a numpy array with a value per event (slices of the ops' ``spans``)."""
        if self.spans is None:
            return values[self.rows]
        out = np.empty(len(self.rows), values.dtype)
        low = 0
        for first, count in zip(*self.spans, strict=True):
            out[low:low + count] = values[first:first + count]
            low += count
        return out

    def _chunks(self, size: int):
        """(first op, end op, rows) of pieces of at most ``size`` ops, in order: ``rows`` a slice of the events
        within one of the ``spans`` where the ops have them (a pandas array reads a slice as a view), else the
        ops' rows."""
        if self.spans is None:
            for low in range(0, len(self.rows), size):
                yield low, min(low + size, len(self.rows)), self.rows[low:low + size]
            return
        low = 0
        for first, count in zip(self.spans[0].tolist(), self.spans[1].tolist(), strict=True):
            for offset in range(0, count, size):
                high = min(offset + size, count)
                yield low + offset, low + high, slice(first + offset, first + high)
            low += count

    def values(self, name: str):
        """The stat at the op rows (an all-missing object array where the capture has no such stat)."""
        values = self.host.stat_at(name, self.rows)
        if values is None:
            return pd.array(np.full(len(self.rows), pd.NA, dtype=object), dtype="object")
        return values

    def factorized(self, name: str, dtype: str | None = None) -> tuple[np.ndarray, list]:
        """(int32 codes, distinct values) of a stat at the op rows (as ``dtype``), as ``pd.factorize``
        gives them, a chunk of rows at a time (no copy of the stat at every op)."""
        codes = np.empty(len(self.rows), np.int32)
        factorizer = Factorizer()
        for low, high, rows in self._chunks(FACTORIZE_ROWS):
            values = self.host.stat_at(name, rows)
            if values is None:
                values = np.full(high - low, pd.NA, dtype=object)
            codes[low:high] = factorizer.codes(values if dtype is None else pd.array(values, dtype=dtype))
        return codes, factorizer.uniques

    def numbers(self, name: str, metadata_rows: np.ndarray | None = None) -> np.ndarray:
        """A numeric stat at the op rows as float64, NaN where missing or not a number. ``metadata_rows``: the
        ops' ``metadata_rows()`` where already made (a metadata stat is then read through them)."""
        if self.integer_kind(name):
            return self._gathered(name, np.float64, np.nan, metadata_rows)
        values = self.values(name)
        return pd.to_numeric(pd.Series(values, copy=False), errors="coerce").to_numpy(np.float64)

    def whole_numbers(self, name: str, metadata_rows: np.ndarray | None = None) -> np.ndarray:
        """A numeric stat at the op rows with 0 where missing: int64 for a signed integer stat (exact,
        half the work of floats), else float64 (NaN and non-numbers as 0). ``metadata_rows``: as for ``numbers``."""
        if self.integer_kind(name) == "i":
            return self._gathered(name, np.int64, 0, metadata_rows)
        numbers = self.numbers(name, metadata_rows)
        return np.where(np.isnan(numbers), 0.0, numbers)

    def metadata_rows(self) -> np.ndarray:
        """Each op's row of ``host.event_metadata`` (-1: none; in the narrowest type that also holds one row more),
        where its metadata stats are read: looked up once for all of them, a chunk of ops at a time."""
        out = np.empty(len(self.rows), code_dtype(len(self.host.event_metadata) + 2))
        for low in range(0, len(self.rows), CHUNK_ROWS):
            out[low:low + CHUNK_ROWS] = self.host.metadata_rows_at(self.rows[low:low + CHUNK_ROWS])
        return out

    def integer_kind(self, name: str) -> str | None:
        """'i'/'u' for a nullable integer stat ('f' for a nullable float one), None otherwise."""
        if name in self.events.columns:
            column = self.events[name].array
            if isinstance(column, pd.arrays.IntegerArray | pd.arrays.FloatingArray):
                return column.dtype.kind
            return None
        sparse = self.host.sparse_stats.get(name)
        if sparse is not None:
            return sparse.values.dtype.kind
        return "i" if name in self.host.metadata_stats else None  # read from the metadata as Int64

    def _gathered(self, name: str, dtype, missing, metadata_rows: np.ndarray | None = None) -> np.ndarray:
        """A nullable stat at the op rows as numpy, a chunk of rows at a time (no second copy); a metadata stat
        through the ops' ``metadata_rows`` where given (one gather from its values, converted once)."""
        if metadata_rows is not None and name in self.host.metadata_stats and name not in self.events.columns:
            try:
                values = self.host.metadata_stat(name).to_numpy(dtype, na_value=missing)
            except (TypeError, ValueError, OverflowError):  # a value the ops may not read: converted per op below
                values = None
            if values is not None:
                return np.append(values, np.asarray(missing, dtype))[metadata_rows]  # row -1 reads the appended one
        out = np.empty(len(self.rows), dtype)
        for low, high, rows in self._chunks(FACTORIZE_ROWS):  # a metadata stat's lookup takes ~30 bytes per row
            out[low:high] = self.host.stat_at(name, rows).to_numpy(dtype, na_value=missing)
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
        whole_lines = _tpu_op_lines(host)
        if whole_lines is not None:
            return _ops_of_lines(host, *whole_lines)
        sel = host.on_lines(named_lines(host, "XLA Ops".__eq__) & plane_lines(host, TPU_PLANE.search))
    elif kind == "gpu":
        sel = host.on_lines(plane_lines(host, lambda name: name.startswith(GPU_PLANE_PREFIX))
                            & ~named_lines(host, DERIVED_DEVICE_LINES.__contains__))
    else:
        on_host = plane_lines(host, HOST_PLANE.__eq__)
        xla = np.zeros(len(ev), bool)
        xla[host.rows_with("hlo_op")] = True
        xla &= ~name_matches(ev, r"^end: ")
        # TensorFlow executor ops ("scope/name:OpType") on the compute threads; tf.data's own
        # threads run input ops, which are not device work.
        tf_ops = name_matches(ev, TF_OP_NAME)
        tf_ops &= host.on_lines(~named_lines(host, re.compile(r"^tf_data").search))
        sel = host.on_lines(on_host) & (xla | tf_ops)
    rows = np.flatnonzero(sel)
    del sel
    if len(ev) < 2**31:
        rows = rows.astype(np.int32)
    rows = _same_rows(host, rows, DEVICE_CLOCK_STATS[1])
    if kind == "cpu":
        core, core_names = np.zeros(len(rows), np.int8), np.array(["cpu"], dtype=object)
    else:
        planes = Coded.of_stat(host, "plane_name", rows)
        core, core_names = planes.codes, planes.labels
    start, duration, self_ps = _op_times(host, rows, device_clock=kind == "tpu")
    return DeviceOpRows(host, rows, start, duration, self_ps, core, core_names)


def _tpu_op_lines(host) -> tuple[np.ndarray, np.ndarray] | None:
    """(first row in ``host.events``, row count) of each ``XLA Ops`` line of a TPU plane that has events, in
    the order of the events (``events.whole_lines``); None where a plane holds two such lines of one id (their
    ops are then one line to the self times)."""
    first, counts = whole_lines(host, "XLA Ops", lambda name: TPU_PLANE.search(name) is not None)
    plane_id, line_id = host.line_ids(first)
    if len(set(zip(plane_id.tolist(), line_id.tolist(), strict=True))) < len(first):
        return None
    return first, counts


def _ops_of_lines(host, first: np.ndarray, counts: np.ndarray) -> DeviceOpRows:
    """The device ops of a TPU host from its whole ``XLA Ops`` lines (``_tpu_op_lines``): slices of the
    event columns, a line at a time, where a selection would gather every op's row."""
    ev = host.events
    n = int(counts.sum())
    rows = np.empty(n, np.int32 if len(ev) < 2**31 else np.int64)
    plane_codes, plane_names = host.line_codes("plane_name")
    core_of_line = plane_codes[host.line_of(first)]
    core = np.empty(n, plane_codes.dtype)
    core_names = np.array([str(c) for c in plane_names], dtype=object)
    start = np.empty(n, np.int64)
    duration = np.empty(n, np.int64)
    self_ps = None
    clock = _DeviceClock(host)
    low = 0
    for first_row, count, line_core in zip(first.tolist(), counts.tolist(), core_of_line.tolist(), strict=True):
        high, row_high = low + count, first_row + count
        rows[low:high] = np.arange(first_row, row_high)
        core[low:high] = line_core
        line_start, line_duration = start[low:high], duration[low:high]
        line_start[:] = _column_slice(ev, "start_ps", first_row, row_high)
        line_duration[:] = _column_slice(ev, "duration_ps", first_row, row_high)
        clock.apply(first_row, row_high, line_start, line_duration)
        own = line_self_time(line_start, line_duration)
        if self_ps is None and own is not line_duration:
            self_ps = np.empty(n, np.int64)
            self_ps[:low] = duration[:low]
        if self_ps is not None:
            self_ps[low:high] = own
        low = high
    self_ps = duration if self_ps is None else self_ps
    shared_rows = _same_rows(host, rows, DEVICE_CLOCK_STATS[1])
    device_duration = _device_durations(host, shared_rows) if shared_rows is not rows else None
    if device_duration is not None:  # every op on the device clock: its durations are the stat's own array
        rows, duration, self_ps = shared_rows, device_duration, device_duration if self_ps is duration else self_ps
    return DeviceOpRows(host, rows, start, duration, self_ps, core, core_names, spans=(first, counts))


def _column_slice(ev: pd.DataFrame, name: str, low: int, high: int) -> np.ndarray:
    """``take(ev, name, rows)`` of the rows ``low:high``: a view of a numpy column."""
    series = ev[name]
    if isinstance(series.dtype, np.dtype):
        return series.to_numpy()[low:high]
    return np.asarray(series.array[low:high].to_numpy(np.int64), dtype=np.int64)


class _DeviceClock:
    """``_device_timespans`` of whole lines (the events ``low:high`` of one line): the TPU's own clock where the
    capture has it, the line's timestamp read once."""

    def __init__(self, host):
        self.host = host
        self.has = host.has_stat("device_offset_ps") and host.has_stat("device_duration_ps")
        if not self.has:
            return
        self.origin_ns = int(getattr(host, "time_origin_ns", 0) or 0)
        lines = host.lines
        keys = list(zip(lines["plane_id"].to_numpy(np.int64).tolist(), lines["line_id"].to_numpy(np.int64).tolist(),
                        strict=True))
        first_of_id: dict[tuple[int, int], int] = {}  # the first line of an id in its plane, as the lookup finds
        for key, timestamp_ns in zip(keys, lines["timestamp_ns"].to_numpy(np.int64).tolist(), strict=True):
            first_of_id.setdefault(key, timestamp_ns)
        self.timestamp_ns = [first_of_id[key] for key in keys]  # per row of ``lines``

    def apply(self, low: int, high: int, start: np.ndarray, duration: np.ndarray) -> None:
        """``start``/``duration`` (the events' own, of rows ``low:high``) set to the device clock's where known."""
        if not self.has or high == low:
            return
        # a column's slice, or a sparse stat's values there (a slice of them where every row has one)
        offset = self.host.stat_at("device_offset_ps", slice(low, high))
        device_duration = self.host.stat_at("device_duration_ps", slice(low, high))
        known = ~(pd.isna(offset) | pd.isna(device_duration))
        if not known.any():
            return
        line = int(self.host.line_of(np.array([low]))[0])
        line_ps = (np.int64(self.timestamp_ns[line]) - self.origin_ns) * 1000
        np.copyto(start, offset.to_numpy(dtype=np.int64, na_value=0) + line_ps, where=known)
        np.copyto(duration, device_duration.to_numpy(dtype=np.int64, na_value=0), where=known)


OP_CHUNK = 1 << 18  # ops whose times are worked out together (whole lines): bounds the temporaries


def _op_times(host, rows: np.ndarray, *, device_clock: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start, duration and self time of the ops at ``rows``, worked out a piece of whole lines at a
    time (a line's ops are adjacent, as the events are stored), so that no temporary is as long as
    all the ops of a big capture. Self time is the duration array itself where nothing nests."""
    ev = host.events
    n = len(rows)
    start = np.empty(n, np.int64)
    device_duration = _device_durations(host, rows) if device_clock else None
    duration = np.empty(n, np.int64) if device_duration is None else device_duration
    self_ps = None  # made at the first piece with nesting: until then, self time is the duration
    for low, high in _line_pieces(host, rows):
        chunk = rows[low:high]
        plane, line = host.line_ids(chunk)
        chunk_start, chunk_duration = take(ev, "start_ps", chunk), take(ev, "duration_ps", chunk)
        if device_clock:
            chunk_start, chunk_duration = _device_timespans(host, chunk, plane, line, chunk_start, chunk_duration)
        start[low:high] = chunk_start
        if device_duration is None:
            duration[low:high] = chunk_duration
        own = self_time_arrays(plane, line, chunk_start, chunk_duration)
        if self_ps is None and own is not chunk_duration:
            self_ps = np.empty(n, np.int64)
            self_ps[:low] = duration[:low]
        if self_ps is not None:
            self_ps[low:high] = own
        del plane, line, chunk_start, chunk_duration, own
    return start, duration, duration if self_ps is None else self_ps


DEVICE_CLOCK_STATS = ("device_offset_ps", "device_duration_ps")


def _same_rows(host, rows: np.ndarray, name: str) -> np.ndarray:
    """The rows of the events that carry sparse stat ``name`` where they are ``rows`` (the TPU ops and
    their own clock's stats): one array for both."""
    stat = host.sparse_stats.get(name)
    if stat is not None and stat.rows.dtype == rows.dtype and np.array_equal(stat.rows, rows):
        return stat.rows
    return rows


def _device_durations(host, rows: np.ndarray) -> np.ndarray | None:
    """The device clock's durations of the ops at ``rows`` as the host keeps them (read-only, no copy), where
    every op has both the device clock's stats and nothing else does; None otherwise."""
    stats = [host.sparse_stats.get(name) for name in DEVICE_CLOCK_STATS]
    if any(stat is None or stat.rows is not rows or stat.codes is not None for stat in stats):
        return None
    durations = stats[1].values
    return durations if durations.dtype == np.int64 else None


def _line_pieces(host, rows: np.ndarray) -> list[tuple[int, int]]:
    """Ranges of ``rows`` of about ``OP_CHUNK`` that cut only between lines; one range when a line's
    rows are not all adjacent (then no cut is safe)."""
    n = len(rows)
    if n <= OP_CHUNK:
        return [(0, n)]
    changes = []
    last = None
    for low in range(0, n, OP_CHUNK):
        chunk = rows[low:low + OP_CHUNK]
        plane, line = host.line_ids(chunk)
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
    if not (host.has_stat("device_offset_ps") and host.has_stat("device_duration_ps")) or not len(rows):
        return start, duration
    offset = host.stat_at("device_offset_ps", rows)
    device_duration = host.stat_at("device_duration_ps", rows)
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
