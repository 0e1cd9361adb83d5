"""The allocator's memory events of an XSpace capture as one columnar table: ``MemoryEvents``.

    from tpudoctor.captures.memory_events import read_memory_events
    events = read_memory_events("host.xplane.pb")   # events.frame: one row per allocation or free

TensorFlow's and PJRT's allocators (BFC, the TPU runtime's) write a ``MemoryAllocation`` or
``MemoryDeallocation`` TraceMe for every buffer they hand out or take back, on the host plane
(``/host:CPU``), with the allocator's state after it as stats: ``bytes_allocated`` (heap in use),
``bytes_reserved`` (stack / reserved region), ``bytes_available`` (free), ``peak_bytes_in_use``
(the allocator's lifetime peak), ``fragmentation``; and about the buffer: ``requested_bytes``,
``allocation_bytes``, ``addr``, ``tf_op``, ``shape``, ``data_type``, ``region_type``, ``group_id``
(the step, once grouped). The allocator is named by ``index_on_host`` / ``device_ordinal``
(a number) or ``allocator_name``; the last of them in the event wins, as in xprof's memory_profile.
A free carries no size of its own on TPU: ``match_frees`` gives it its allocation's (by ``addr``).

Read at the wire level (``tpudoctor.captures.wire``), on the first host plane only, line by line:
each batch's metadata ids read first and only the memory events' fields and stats decoded, with
numpy, into columns (memory bounded by the memory events, not the host plane's other events); no Python object per event: string values are compared as bytes with
numpy and decoded once per distinct value (categoricals), allocator ids once per distinct id.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from tpudoctor.captures import wire
from tpudoctor.captures.memory_event_stats import (
    BYTES,
    DOUBLE,
    INT64,
    INT_STATS,
    MEMORY_STAT_ORDER,
    PADDING,
    STR,
    TEXT_STATS,
    UINT64,
    Gathered,
    allocator_column,
    code_texts,
    dtype_column,
    event_fields,
    parse_line,
    stats,
    text_column,
)
from tpudoctor.captures.schema import message_class
from tpudoctor.captures.xspace.event_wire import metadata_ids
from tpudoctor.errors import InputError

HOST_PLANE = "/host:CPU"
ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"
BATCH_EVENTS = 1 << 17  # host-plane events whose metadata ids are read together: bounds the temporaries
STREAM_MIN_BYTES = 64 << 20  # larger local files are read plane by plane (the profile loader's threshold)

COLUMNS = ("allocator", "is_allocation", "time_ps", "offset_ps", "line_id", "heap_bytes", "stack_bytes",
           "free_bytes", "lifetime_peak_bytes", "fragmentation", "requested_bytes", "allocation_bytes", "addr",
           "tf_op", "shape", "dtype", "region_type", "group_id", "annotation_step", "file_order")


@dataclasses.dataclass
class MemoryEvents:
    """One capture's memory events, ``frame`` one row per event in file order (``file_order``).

    Columns: ``allocator`` (categorical: "0", "GPU_0_bfc"...), ``is_allocation``, ``time_ps``
    (picoseconds since ``time_origin_ns``, the earliest host line with events), ``offset_ps`` (from
    the event's own line's timestamp: xprof's ``time_offset_ps``), ``line_id``; the allocator after
    the event: ``heap_bytes`` (``bytes_allocated``), ``stack_bytes`` (``bytes_reserved``),
    ``free_bytes`` (``bytes_available``), ``lifetime_peak_bytes`` (``peak_bytes_in_use``),
    ``fragmentation`` (0..1); the buffer: ``requested_bytes``, ``allocation_bytes`` (0 where absent,
    as on TPU frees), ``addr``, ``tf_op``, ``shape``, ``dtype`` (DataTypeString names), ``region_type``
    (categoricals, "" where absent, as xprof shows them); ``group_id`` (nullable: the step, where the
    capture was grouped), ``annotation_step`` (TensorFlow's ``id`` stat, nullable)."""

    source: str
    frame: pd.DataFrame
    time_origin_ns: int
    has_host_plane: bool = True
    warnings: list[str] = dataclasses.field(default_factory=list)

    @property
    def allocators(self) -> list[str]:
        """The allocator ids with events, sorted as strings (xprof's ``memoryIds``)."""
        return sorted(self.frame["allocator"].unique().tolist()) if len(self.frame) else []

    def __len__(self) -> int:
        return len(self.frame)

    def rebase(self, origin_ns: int) -> None:
        """Express ``time_ps`` from ``origin_ns`` (a ``HostProfile.time_origin_ns``, to line up with its events)."""
        if origin_ns != self.time_origin_ns:
            self.frame["time_ps"] += (self.time_origin_ns - origin_ns) * 1000
            self.time_origin_ns = origin_ns


def read_memory_events(path: str | os.PathLike, *, source: str | None = None) -> MemoryEvents:
    """The memory events of a local ``.xplane.pb``; ``InputError`` where it is not a readable XSpace.

    A file of ``STREAM_MIN_BYTES`` or more is read plane by plane: only the host plane's lines
    are read from disk and parsed, one line at a time."""
    from tpudoctor.captures.validate import check_bytes
    from tpudoctor.captures.xspace.planes_on_disk import layout, planes_on_disk

    path = os.fspath(path)
    source = source or path
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        if size < STREAM_MIN_BYTES:
            return memory_events_from_bytes(handle.read(), source=source)
        check_bytes(handle.read(1 << 20), source)
        found = layout(handle, size)
    if found is None:  # not a clean XSpace layout: the whole-file path says what is wrong
        with open(path, "rb") as handle:
            return memory_events_from_bytes(handle.read(), source=source)
    planes, errors, warnings = found
    return _decode(lambda: _host_planes(planes_on_disk(path, source, planes)), source, errors, warnings)


def memory_events_from_bytes(data: bytes, *, source: str) -> MemoryEvents:
    """``read_memory_events`` for a serialized XSpace held in memory."""
    from tpudoctor.captures.validate import check_bytes, explain_parse_failure

    check_bytes(data, source)
    try:
        space = message_class("XSpace", raw=True).FromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
        raise explain_parse_failure(data, source) from exc
    if not any(plane.name for plane in space.planes):
        raise InputError(f"{source} is not an XSpace profile: it decodes to no named planes",
                         hint="pass a <host>.xplane.pb written by the TensorFlow/JAX profiler")
    del data
    box = {"space": space}
    errors, warnings = list(space.errors), list(space.warnings)
    del space
    return _decode(lambda: _host_planes(box["space"].planes), source, errors, warnings, release=box.clear)


def _host_planes(planes: Iterable[Any]) -> Iterator[Any]:
    return (plane for plane in planes if plane.name == HOST_PLANE)


def _decode(planes, source: str, errors: list[str], warnings: list[str], release=None) -> MemoryEvents:
    try:
        return _memory_events(planes, source, warnings, release)
    except wire.WireError as exc:
        raise InputError(f"{source} is corrupt: {exc}",
                         hint="the file was damaged after it was written; capture again") from exc


def _memory_events(planes, source: str, warnings: list[str], release) -> MemoryEvents:
    """The first host plane's memory events: each line parsed in turn (its events as bytes), its
    events' metadata ids read BATCH_EVENTS at a time, and only the memory events' fields and stats
    decoded; the rest of the plane is never held beyond its batch."""
    iterator = iter(planes())
    try:
        plane = next(iterator, None)
        if plane is None:
            return empty_memory_events(source, has_host_plane=False, warnings=list(warnings))
        return plane_memory_events(plane, source, warnings)
    finally:
        plane = None
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
        if release is not None:
            release()


def plane_memory_events(plane, source: str, warnings: list[str]) -> MemoryEvents:
    scan = _PlaneScan.of(plane)
    if scan is None or not scan.n:
        return empty_memory_events(source, warnings=list(warnings))
    line = np.concatenate(scan.event_line)
    line_ts = np.asarray(scan.line_ts, dtype=np.int64)
    offset_ps = np.concatenate(scan.event_offset)
    origin_ns = int(line_ts[np.asarray(scan.line_with_events, dtype=bool)].min())
    columns = _stat_columns(scan)
    frame = pd.DataFrame({
        "allocator": columns["allocator"],
        "is_allocation": np.concatenate(scan.event_alloc),
        "time_ps": offset_ps + (line_ts[line] - origin_ns) * 1000,
        "offset_ps": offset_ps,
        "line_id": np.asarray(scan.line_ids, dtype=np.int64)[line],
        **{name: columns[name] for name in COLUMNS[5:-1] if name in columns},
        "file_order": np.arange(scan.n, dtype=np.int64),
    }, copy=False)
    frame = frame[list(COLUMNS)]
    return MemoryEvents(source=source, frame=frame, time_origin_ns=origin_ns, warnings=list(warnings))


@dataclasses.dataclass
class _PlaneScan:
    """One pass over a host plane: per line its id, time and whether it has events; per memory event its
    line, offset and kind; the stats of the memory events, gathered (``event_stats.Gathered``)."""

    ref_ids: np.ndarray
    ref_names: list[str]
    alloc_ids: np.ndarray
    memory_ids: np.ndarray
    name_table: np.ndarray
    line_ids: list[int] = dataclasses.field(default_factory=list)
    line_ts: list[int] = dataclasses.field(default_factory=list)
    line_with_events: list[bool] = dataclasses.field(default_factory=list)
    event_line: list[np.ndarray] = dataclasses.field(default_factory=list)
    event_offset: list[np.ndarray] = dataclasses.field(default_factory=list)
    event_alloc: list[np.ndarray] = dataclasses.field(default_factory=list)
    gathered: Gathered = dataclasses.field(default_factory=Gathered)
    n: int = 0

    @classmethod
    def of(cls, plane) -> _PlaneScan | None:
        """The plane scanned; None where no event metadata is a memory event (nothing to decode)."""
        names_by_id = {int(key): value.name for key, value in plane.stat_metadata.items()}
        ref_ids = np.asarray(sorted(names_by_id), dtype=np.int64)
        ref_names = [names_by_id[key] for key in ref_ids.tolist()]
        alloc_ids = np.asarray([int(k) for k, m in plane.event_metadata.items() if m.name == ALLOCATION],
                               dtype=np.int64)
        free_ids = np.asarray([int(k) for k, m in plane.event_metadata.items() if m.name == DEALLOCATION],
                              dtype=np.int64)
        memory_ids = np.concatenate([alloc_ids, free_ids])
        if not len(memory_ids):
            return None
        position = {name: index for index, name in enumerate(MEMORY_STAT_ORDER)}
        # stat metadata row -> position in MEMORY_STAT_ORDER (-1: not read); the last row: unknown ids
        name_table = np.asarray([position.get(name, -1) for name in ref_names] + [-1], dtype=np.int16)
        scan = cls(ref_ids, ref_names, alloc_ids, memory_ids, name_table)
        for line_index, line_bytes in enumerate(plane.lines):
            line = parse_line(line_bytes)
            del line_bytes
            events = line.events
            scan.line_ids.append(line.id)
            scan.line_ts.append(line.timestamp_ns)
            scan.line_with_events.append(len(events) > 0)
            for low in range(0, len(events), BATCH_EVENTS):
                scan._batch(line_index, events[low:low + BATCH_EVENTS])
            del line, events
        return scan

    def _batch(self, line_index: int, chunk: list[bytes]) -> None:
        """One batch of a line's events: metadata ids first, then only the memory events' fields and stats."""
        lengths = np.fromiter(map(len, chunk), dtype=np.int64, count=len(chunk))
        chunk.append(PADDING)
        buffer = wire.Buffer(b"".join(chunk), padded=True)
        del chunk
        ends = np.cumsum(lengths)
        starts = ends - lengths
        metadata_id = metadata_ids(buffer, starts, ends)
        keep = np.flatnonzero(np.isin(metadata_id, self.memory_ids))
        if not len(keep):
            return
        offset_ps, stat_event, stat_start, stat_end = event_fields(buffer, starts[keep], ends[keep])
        self.event_line.append(np.full(len(keep), line_index, dtype=np.int64))
        self.event_offset.append(offset_ps)
        self.event_alloc.append(np.isin(metadata_id[keep], self.alloc_ids))
        stat_id, kind, raw, text_start, text_length = stats(buffer, stat_start, stat_end)
        ref_ids = self.ref_ids
        at = np.minimum(np.searchsorted(ref_ids, stat_id), len(ref_ids))
        known = at < len(ref_ids)
        known[known] = ref_ids[at[known]] == stat_id[known]
        name = self.name_table[np.where(known, at, len(ref_ids))]
        rows = np.flatnonzero(name >= 0)
        if len(rows):
            kind, raw = kind[rows], raw[rows]
            text_rows = np.flatnonzero((kind == STR) | (kind == BYTES))
            text_codes, distinct = (code_texts(buffer.bytes, text_start[rows[text_rows]],
                                               text_length[rows[text_rows]])
                                    if len(text_rows) else (None, []))
            self.gathered.add((stat_event[rows] + self.n).astype(np.int32), name[rows], raw, kind, text_rows,
                              text_codes, distinct)
        self.n += len(keep)


def _stat_columns(scan: _PlaneScan) -> dict[str, Any]:
    """The memory events' stats as columns: integers (with presence where a stat may be absent),
    fragmentation, texts as categoricals, the allocator, the dtype."""
    n = scan.n
    target, stat_name, stat_raw, stat_kind, stat_text = scan.gathered.arrays()
    columns: dict[str, Any] = {}
    for stat, column in INT_STATS.items():
        values, present = _int_stat(MEMORY_STAT_ORDER.index(stat), n, target, stat_name, stat_raw, stat_kind)
        columns[column] = (pd.arrays.IntegerArray(values, ~present) if column in ("group_id", "annotation_step")
                           else values)
    columns["fragmentation"] = _fragmentation(n, target, stat_name, stat_raw, stat_kind)
    text_list = list(scan.gathered.texts)
    for stat, column in TEXT_STATS.items():
        columns[column] = text_column(stat, n, target, stat_name, stat_raw, stat_kind, stat_text, text_list,
                                      scan.ref_ids, scan.ref_names)
    columns["allocator"] = allocator_column(n, target, stat_name, stat_raw, stat_kind, stat_text, text_list,
                                            scan.ref_ids, scan.ref_names)
    columns["dtype"] = dtype_column(columns.pop("data_type_enum"))
    return columns


def _int_stat(code: int, n: int, target, stat_name, stat_raw, stat_kind) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, present) of an integer stat; doubles truncated, uint64 over 2^63 wrap."""
    hit = np.flatnonzero(stat_name == code)
    values = np.zeros(n, dtype=np.int64)
    present = np.zeros(n, dtype=bool)
    raw, kind = stat_raw[hit], stat_kind[hit]
    ints = (kind == INT64) | (kind == UINT64)
    doubles = kind == DOUBLE
    values[target[hit[ints]]] = raw[ints].view(np.int64)
    as_float = raw[doubles].view(np.float64)
    fits = np.isfinite(as_float) & (np.abs(as_float) < 2.0**63)
    values[target[hit[doubles][fits]]] = as_float[fits].astype(np.int64)
    present[target[hit[ints]]] = True
    present[target[hit[doubles][fits]]] = True
    return values, present


def _fragmentation(n: int, target, stat_name, stat_raw, stat_kind) -> np.ndarray:
    """A double, or an int 0 where the allocator had no free chunk."""
    hit = np.flatnonzero(stat_name == MEMORY_STAT_ORDER.index("fragmentation"))
    fragmentation = np.zeros(n)
    raw, kind = stat_raw[hit], stat_kind[hit]
    doubles = kind == DOUBLE
    fragmentation[target[hit[doubles]]] = raw[doubles].view(np.float64)
    ints = kind == INT64
    fragmentation[target[hit[ints]]] = raw[ints].view(np.int64)
    uints = kind == UINT64
    fragmentation[target[hit[uints]]] = raw[uints]
    return fragmentation


def empty_memory_events(source: str, *, has_host_plane: bool = True, warnings: list[str] | None = None) -> MemoryEvents:
    frame = pd.DataFrame({
        "allocator": pd.Categorical([], categories=pd.Index([""], dtype=object)),
        "is_allocation": np.zeros(0, dtype=bool),
        **{name: np.zeros(0, dtype=np.int64) for name in COLUMNS[2:9]},
        "fragmentation": np.zeros(0),
        **{name: np.zeros(0, dtype=np.int64) for name in ("requested_bytes", "allocation_bytes", "addr")},
        **{name: pd.Categorical([], categories=pd.Index([""], dtype=object))
           for name in ("tf_op", "shape", "dtype", "region_type")},
        "group_id": pd.array([], dtype="Int64"),
        "annotation_step": pd.array([], dtype="Int64"),
        "file_order": np.zeros(0, dtype=np.int64),
    })
    return MemoryEvents(source=source, frame=frame[list(COLUMNS)], time_origin_ns=0, has_host_plane=has_host_plane,
                        warnings=warnings or [])
