"""The allocator's memory events of an XSpace capture as one columnar table: ``MemoryEvents``.

    from tpudoctor.memory.events import read_memory_events
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

Read at the wire level (``tpudoctor.profile.wire``), on the first host plane only, line by line:
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

from tpudoctor.errors import InputError
from tpudoctor.profile import wire
from tpudoctor.profile.schema import message_class

# XStat value fields (their field numbers): the kind of each decoded stat value
DOUBLE, UINT64, INT64, STR, BYTES, REF = 2, 3, 4, 5, 6, 7

HOST_PLANE = "/host:CPU"
ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"
BATCH_EVENTS = 1 << 17  # host-plane events whose metadata ids are read together: bounds the temporaries
STREAM_MIN_BYTES = 64 << 20  # larger local files are read plane by plane (the profile loader's threshold)

# stat name -> column, for the stats read as integers
INT_STATS = {
    "bytes_allocated": "heap_bytes",
    "bytes_reserved": "stack_bytes",
    "bytes_available": "free_bytes",
    "peak_bytes_in_use": "lifetime_peak_bytes",
    "requested_bytes": "requested_bytes",
    "allocation_bytes": "allocation_bytes",
    "addr": "addr",
    "group_id": "group_id",
    "id": "annotation_step",
    "data_type": "data_type_enum",
}
FLOAT_STATS = {"fragmentation": "fragmentation"}
TEXT_STATS = {"tf_op": "tf_op", "shape": "shape", "region_type": "region_type"}
ALLOCATOR_STATS = ("index_on_host", "device_ordinal", "allocator_name")
MEMORY_STATS = frozenset(INT_STATS) | frozenset(FLOAT_STATS) | frozenset(TEXT_STATS) | frozenset(ALLOCATOR_STATS)

# TensorFlow's DataType enum (tensorflow/core/framework/types.proto) as DataTypeString writes it,
# which is what xprof's memory_profile shows; numbers outside it read "unknown dtype enum (N)".
DATA_TYPE_NAMES = (
    "INVALID", "float", "double", "int32", "uint8", "int16", "int8", "string", "complex64", "int64", "bool",
    "qint8", "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16", "complex128", "half", "resource",
    "variant", "uint32", "uint64", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
    "float8_e5m2fnuz", "int4", "uint4", "int2", "uint2", "float4_e2m1fn",
)

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
    from tpudoctor.profile.validate import check_bytes
    from tpudoctor.profile.xspace.planes_on_disk import layout, planes_on_disk

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
    from tpudoctor.profile.validate import check_bytes, explain_parse_failure

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


def _parse_line(data: bytes):
    """An XLine (its events as bytes) from its bytes; ``WireError`` when they do not decode."""
    try:
        return message_class("XLine", raw=True).FromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
        raise wire.WireError("a line of the host plane does not decode") from exc


class _Gathered:
    """The memory events' stats of every batch, kept as parallel arrays until the events are known."""

    def __init__(self):
        self.event: list[np.ndarray] = []
        self.name: list[np.ndarray] = []  # position in MEMORY_STAT_ORDER
        self.raw: list[np.ndarray] = []
        self.kind: list[np.ndarray] = []
        self.text_code: list[np.ndarray] = []  # STR/BYTES values: code in ``texts`` (-1: not a text)
        self.texts: dict[str, int] = {}

    def add(self, event, name, raw, kind, text_rows, text_codes, distinct: list[str]) -> None:
        """One batch's stats; ``text_codes`` index ``distinct`` (that batch's distinct texts)."""
        codes = np.full(len(event), -1, dtype=np.int32)
        if len(text_rows):
            index = self.texts
            to_global = np.asarray([index.setdefault(text, len(index)) for text in distinct], dtype=np.int64)
            codes[text_rows] = to_global[text_codes]
        self.event.append(event)
        self.name.append(name)
        self.raw.append(raw)
        self.kind.append(kind)
        self.text_code.append(codes)

    def arrays(self):
        """The gathered arrays joined, one at a time (each list's parts dropped once joined); batches
        come in file order and each batch's stats grouped by event, so no sort is needed."""
        def joined(parts, dtype):
            out = np.concatenate(parts) if parts else np.zeros(0, dtype)
            parts.clear()
            return out
        return (joined(self.event, np.int32), joined(self.name, np.int16), joined(self.raw, np.uint64),
                joined(self.kind, np.int8), joined(self.text_code, np.int32))


TEXT_BLOCK_BYTES = 1 << 24  # bytes of string values compared at a time


def _text_codes(data: np.ndarray, start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(code of each string value ``data[start:start + length]``, the distinct values): the values
    compared as bytes with numpy, one string decoded per distinct value."""
    codes = np.empty(len(start), dtype=np.int64)
    distinct: list[str] = []
    for size in np.unique(length).tolist():
        same = np.flatnonzero(length == size)
        if size == 0:
            codes[same] = len(distinct)
            distinct.append("")
            continue
        step = max(1, TEXT_BLOCK_BYTES // size)
        found: dict[bytes, int] = {}
        for low in range(0, len(same), step):
            part = same[low:low + step]
            block = np.ascontiguousarray(data[start[part, None] + np.arange(size)])
            unique, inverse = np.unique(block.view(np.dtype((np.void, size))).ravel(), return_inverse=True)
            local = np.asarray([found.setdefault(value.tobytes(), len(found)) for value in unique], dtype=np.int64)
            codes[part] = local[np.asarray(inverse).reshape(-1)] + len(distinct)
        distinct.extend(value.decode("utf-8", errors="replace") for value in found)
    return codes, distinct


MEMORY_STAT_ORDER = (*INT_STATS, *FLOAT_STATS, *TEXT_STATS, *ALLOCATOR_STATS)
_PADDING = bytes(wire.PAD_BYTES)
_TAG_METADATA_ID = 0x08  # XEvent.metadata_id as writers put it: the event's first field


def _metadata_ids(buffer: wire.Buffer, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each event's metadata_id (field 1): read where writers put it (first), else by a field walk."""
    data = buffer.bytes
    metadata_id = np.zeros(len(starts), dtype=np.int64)
    first = np.flatnonzero((data[starts] == _TAG_METADATA_ID) & (starts < ends))
    if len(first):
        metadata_id[first] = wire.read_varints(buffer, starts[first] + 1)[0].view(np.int64)
    other = np.ones(len(starts), dtype=bool)
    other[first] = False
    other = np.flatnonzero(other)
    if len(other):
        for alive, field, wire_type, _, value, _ in wire.scan_fields(buffer, starts[other], ends[other]):
            hit = (field == 1) & (wire_type == wire.WIRE_VARINT)
            metadata_id[other[alive[hit]]] = value[hit].view(np.int64)
    return metadata_id


def _event_fields(buffer: wire.Buffer, starts: np.ndarray, ends: np.ndarray):
    """(offset_ps, stats' event, start, end) of the XEvents at the spans: a field walk of each event
    (only the memory events get here); stats grouped by event, in their order in it."""
    offset_ps = np.zeros(len(starts), dtype=np.int64)
    stat_event, stat_start, stat_end = [], [], []
    for alive, field, wire_type, value_pos, value, length in wire.scan_fields(buffer, starts, ends):
        hit = (field == 2) & (wire_type == wire.WIRE_VARINT)
        offset_ps[alive[hit]] = value[hit].view(np.int64)
        hit = np.flatnonzero((field == 4) & (wire_type == wire.WIRE_LEN))
        stat_event.append(alive[hit])
        stat_start.append(value_pos[hit])
        stat_end.append(value_pos[hit] + length[hit])
    event = np.concatenate(stat_event) if stat_event else np.zeros(0, np.int64)
    order = np.argsort(event, kind="stable")
    starts_out = np.concatenate(stat_start) if stat_start else np.zeros(0, np.int64)
    ends_out = np.concatenate(stat_end) if stat_end else np.zeros(0, np.int64)
    return offset_ps, event[order], starts_out[order], ends_out[order]


def _stats(buffer: wire.Buffer, starts: np.ndarray, ends: np.ndarray):
    """(metadata_id, kind, raw 64 bits, text start, text length) of the XStats at the spans; a
    value field written twice: the last wins, as protobuf reads it."""
    n = len(starts)
    metadata_id = np.zeros(n, dtype=np.int64)
    kind = np.zeros(n, dtype=np.int8)
    raw = np.zeros(n, dtype=np.uint64)
    text_start = np.zeros(n, dtype=np.int64)
    text_length = np.zeros(n, dtype=np.int64)
    for alive, field, wire_type, value_pos, value, length in wire.scan_fields(buffer, starts, ends):
        varint = wire_type == wire.WIRE_VARINT
        hit = (field == 1) & varint
        metadata_id[alive[hit]] = value[hit].view(np.int64)
        for number in (UINT64, INT64, REF):
            hit = (field == number) & varint
            kind[alive[hit]] = number
            raw[alive[hit]] = value[hit]
        hit = (field == DOUBLE) & (wire_type == wire.WIRE_FIXED64)
        if hit.any():
            kind[alive[hit]] = DOUBLE
            raw[alive[hit]] = wire.read_fixed64(buffer, value_pos[hit])
        for number in (STR, BYTES):
            hit = (field == number) & (wire_type == wire.WIRE_LEN)
            kind[alive[hit]] = number
            text_start[alive[hit]] = value_pos[hit]
            text_length[alive[hit]] = length[hit]
    return metadata_id, kind, raw, text_start, text_length


def _memory_events(planes, source: str, warnings: list[str], release) -> MemoryEvents:
    """The first host plane's memory events: each line parsed in turn (its events as bytes), its
    events' metadata ids read BATCH_EVENTS at a time, and only the memory events' fields and stats
    decoded; the rest of the plane is never held beyond its batch."""
    iterator = iter(planes())
    try:
        plane = next(iterator, None)
        if plane is None:
            return _empty(source, has_host_plane=False, warnings=list(warnings))
        return _plane_memory_events(plane, source, warnings)
    finally:
        plane = None
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
        if release is not None:
            release()


def _plane_memory_events(plane, source: str, warnings: list[str]) -> MemoryEvents:
    names_by_id = {int(key): value.name for key, value in plane.stat_metadata.items()}
    ref_ids = np.asarray(sorted(names_by_id), dtype=np.int64)
    ref_names = [names_by_id[key] for key in ref_ids.tolist()]
    alloc_ids = np.asarray([int(k) for k, m in plane.event_metadata.items() if m.name == ALLOCATION], dtype=np.int64)
    free_ids = np.asarray([int(k) for k, m in plane.event_metadata.items() if m.name == DEALLOCATION],
                          dtype=np.int64)
    memory_ids = np.concatenate([alloc_ids, free_ids])
    if not len(memory_ids):  # no event can be a memory event: nothing to decode
        return _empty(source, warnings=list(warnings))
    position = {name: index for index, name in enumerate(MEMORY_STAT_ORDER)}
    # stat metadata row -> position in MEMORY_STAT_ORDER (-1: not read); the last row: unknown ids
    name_table = np.asarray([position.get(name, -1) for name in ref_names] + [-1], dtype=np.int16)
    line_ids: list[int] = []
    line_ts: list[int] = []
    line_with_events: list[bool] = []
    event_line, event_offset, event_alloc = [], [], []
    gathered = _Gathered()
    n_memory = 0
    for line_index, line_bytes in enumerate(plane.lines):
        line = _parse_line(line_bytes)
        del line_bytes
        events = line.events
        count = len(events)
        line_ids.append(line.id)
        line_ts.append(line.timestamp_ns)
        line_with_events.append(count > 0)
        for low in range(0, count, BATCH_EVENTS):
            chunk = events[low:low + BATCH_EVENTS]
            lengths = np.fromiter(map(len, chunk), dtype=np.int64, count=len(chunk))
            chunk.append(_PADDING)
            buffer = wire.Buffer(b"".join(chunk), padded=True)
            del chunk
            ends = np.cumsum(lengths)
            starts = ends - lengths
            metadata_id = _metadata_ids(buffer, starts, ends)
            keep = np.flatnonzero(np.isin(metadata_id, memory_ids))
            if not len(keep):
                continue
            offset_ps, stat_event, stat_start, stat_end = _event_fields(buffer, starts[keep], ends[keep])
            event_line.append(np.full(len(keep), line_index, dtype=np.int64))
            event_offset.append(offset_ps)
            event_alloc.append(np.isin(metadata_id[keep], alloc_ids))
            stat_id, kind, raw, text_start, text_length = _stats(buffer, stat_start, stat_end)
            at = np.minimum(np.searchsorted(ref_ids, stat_id), len(ref_ids))
            known = at < len(ref_ids)
            known[known] = ref_ids[at[known]] == stat_id[known]
            name = name_table[np.where(known, at, len(ref_ids))]
            rows = np.flatnonzero(name >= 0)
            if len(rows):
                kind, raw = kind[rows], raw[rows]
                text_rows = np.flatnonzero((kind == STR) | (kind == BYTES))
                text_codes, distinct = (_text_codes(buffer.bytes, text_start[rows[text_rows]],
                                                    text_length[rows[text_rows]])
                                        if len(text_rows) else (None, []))
                gathered.add((stat_event[rows] + n_memory).astype(np.int32), name[rows], raw, kind, text_rows, text_codes, distinct)
            n_memory += len(keep)
            del buffer
        del line, events

    n = n_memory
    if not n:
        return _empty(source, warnings=list(warnings))
    line = np.concatenate(event_line)
    line_ts_array = np.asarray(line_ts, dtype=np.int64)
    offset_ps = np.concatenate(event_offset)
    with_events = np.asarray(line_with_events, dtype=bool)
    origin_ns = int(line_ts_array[with_events].min())
    columns: dict[str, Any] = {}

    target, stat_name, stat_raw, stat_kind, stat_text = gathered.arrays()

    def numbers(name: str) -> tuple[np.ndarray, np.ndarray]:
        """(int64 values, present) of an integer stat; doubles truncated, uint64 over 2^63 wrap."""
        hit = np.flatnonzero(stat_name == MEMORY_STAT_ORDER.index(name))
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

    for stat, column in INT_STATS.items():
        values, present = numbers(stat)
        if column in ("group_id", "annotation_step"):
            columns[column] = pd.arrays.IntegerArray(values, ~present)
        else:
            columns[column] = values
    hit = np.flatnonzero(stat_name == MEMORY_STAT_ORDER.index("fragmentation"))
    fragmentation = np.zeros(n)
    raw, kind = stat_raw[hit], stat_kind[hit]
    doubles = kind == DOUBLE
    fragmentation[target[hit[doubles]]] = raw[doubles].view(np.float64)
    ints = kind == INT64
    fragmentation[target[hit[ints]]] = raw[ints].view(np.int64)  # an int 0 where the allocator had no free chunk
    uints = kind == UINT64
    fragmentation[target[hit[uints]]] = raw[uints]
    columns["fragmentation"] = fragmentation

    text_list = list(gathered.texts)
    for stat, column in TEXT_STATS.items():
        columns[column] = _text_column(stat, n, target, stat_name, stat_raw, stat_kind, stat_text, text_list,
                                       ref_ids, ref_names)
    columns["allocator"] = _allocator_column(n, target, stat_name, stat_raw, stat_kind, stat_text, text_list,
                                             ref_ids, ref_names)
    data_type = columns.pop("data_type_enum")
    columns["dtype"] = _dtype_column(data_type)
    frame = pd.DataFrame({
        "allocator": columns["allocator"],
        "is_allocation": np.concatenate(event_alloc),
        "time_ps": offset_ps + (line_ts_array[line] - origin_ns) * 1000,
        "offset_ps": offset_ps,
        "line_id": np.asarray(line_ids, dtype=np.int64)[line],
        **{name: columns[name] for name in COLUMNS[5:-1] if name in columns},
        "file_order": np.arange(n, dtype=np.int64),
    }, copy=False)
    frame = frame[list(COLUMNS)]
    return MemoryEvents(source=source, frame=frame, time_origin_ns=origin_ns, warnings=list(warnings))


def _text_column(stat, n, target, stat_name, stat_raw, stat_kind, stat_text, text_list, ref_ids, ref_names):
    """A string stat as a categorical ("" where absent): refs resolved to their stat names, str values by code."""
    hit = np.flatnonzero(stat_name == MEMORY_STAT_ORDER.index(stat))
    codes = np.full(n, -1, dtype=np.int64)  # -1: absent
    kind = stat_kind[hit]
    categories: list[str] = []
    strs = stat_text[hit] >= 0
    if strs.any():
        text_codes = stat_text[hit[strs]]
        used, inverse = np.unique(text_codes, return_inverse=True)
        categories.extend(text_list[c] for c in used.tolist())
        codes[target[hit[strs]]] = inverse
    refs = kind == REF
    if refs.any():
        ids = stat_raw[hit[refs]].view(np.int64)
        used, inverse = np.unique(ids, return_inverse=True)
        at = np.minimum(np.searchsorted(ref_ids, used), max(len(ref_ids) - 1, 0))
        names = [ref_names[p] if len(ref_ids) and ref_ids[p] == u else "" for p, u in zip(at.tolist(), used.tolist(),
                                                                                          strict=True)]
        codes[target[hit[refs]]] = inverse + len(categories)
        categories.extend(names)
    return _categorical(codes, categories)


def _allocator_column(n, target, stat_name, stat_raw, stat_kind, stat_text, text_list, ref_ids, ref_names):
    """The allocator id of each event: the last of index_on_host / device_ordinal (as a number) or
    allocator_name (as text) among its stats, as xprof reads it; "" where the event has none."""
    wanted = [MEMORY_STAT_ORDER.index(name) for name in ALLOCATOR_STATS]
    hit = np.flatnonzero(np.isin(stat_name, wanted))
    codes = np.full(n, -1, dtype=np.int64)
    if not len(hit):
        return _categorical(codes, [])
    last = hit[np.r_[target[hit][1:] != target[hit][:-1], True]]  # stats are grouped by event, in order
    kind, raw, text = stat_kind[last], stat_raw[last], stat_text[last]
    # a key per distinct value: (0, int) numbers, (1, text code), (2, ref id)
    key_class = np.where(text >= 0, 1, np.where(kind == REF, 2, 0))
    key_value = np.where(text >= 0, text, raw.view(np.int64))
    key_value = np.where((kind == DOUBLE) & (key_class == 0), raw.view(np.float64).astype(np.int64), key_value)
    keys = np.stack([key_class, key_value], axis=1)
    used, inverse = np.unique(keys, axis=0, return_inverse=True)
    names: list[str] = []
    for key_class_value, value in used.tolist():
        if key_class_value == 1:
            names.append(text_list[value])
        elif key_class_value == 2:
            at = int(np.searchsorted(ref_ids, value))
            names.append(ref_names[at] if at < len(ref_ids) and ref_ids[at] == value else "")
        else:
            names.append(str(value))
    codes[target[last]] = np.asarray(inverse).reshape(-1)
    return _categorical(codes, names)


def _dtype_column(data_type: np.ndarray) -> pd.Categorical:
    used, inverse = np.unique(data_type, return_inverse=True)
    names = [DATA_TYPE_NAMES[v] if 0 <= v < len(DATA_TYPE_NAMES) else f"unknown dtype enum ({v})"
             for v in used.tolist()]
    return _categorical(np.asarray(inverse).reshape(-1), names)


def _categorical(codes: np.ndarray, names: list[str]) -> pd.Categorical:
    """Codes over ``names`` (-1: ""), with equal names merged: a categorical without missing values."""
    distinct = list(dict.fromkeys(["", *names]))
    remap = np.asarray([distinct.index(name) for name in names] + [0], dtype=np.int64)
    return pd.Categorical.from_codes(remap[codes].astype(np.int32), categories=pd.Index(distinct, dtype=object),
                                     validate=False)


def _empty(source: str, *, has_host_plane: bool = True, warnings: list[str] | None = None) -> MemoryEvents:
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
