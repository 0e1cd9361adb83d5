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

Read with the profile loader's wire decoder (``tpudoctor.profile.xspace.decoder``), on the host
plane only: its events' fields and stats decoded batch by batch with numpy, the memory events'
stats gathered into columns; no Python object per event: string values are compared as bytes with
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
from tpudoctor.profile.xspace.decoder import (
    BYTES,
    DOUBLE,
    INT64,
    REF,
    STR,
    UINT64,
    EventFields,
    XSpaceDecoder,
)

HOST_PLANE = "/host:CPU"
ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"
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
    decoder = XSpaceDecoder(planes, errors, warnings, release=release)
    try:
        return _memory_events(decoder, source)
    except wire.WireError as exc:
        raise InputError(f"{source} is corrupt: {exc}",
                         hint="the file was damaged after it was written; capture again") from exc


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
        codes = np.full(len(event), -1, dtype=np.int64)
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
        def joined(parts, dtype):
            return np.concatenate(parts) if parts else np.zeros(0, dtype)
        event = joined(self.event, np.int64)
        order = np.argsort(event, kind="stable")  # each event's stats together, in their order in the event
        return (event[order], joined(self.name, np.int16)[order], joined(self.raw, np.uint64)[order],
                joined(self.kind, np.int8)[order], joined(self.text_code, np.int64)[order])


TEXT_BLOCK_BYTES = 1 << 24  # bytes of string values compared at a time


def _text_codes(batch, rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(code of each stat row's string value, the distinct values): the values compared as bytes
    with numpy, one string decoded per distinct value. Reads the batch's buffer and value spans
    (``StatBatch``'s own fields: the decoder has no public accessor for them yet); where a decoder
    lacks them, its ``texts``."""
    stats, strings = getattr(batch, "_stats", None), getattr(batch, "_strings", None)
    data = getattr(getattr(strings, "buffer", None), "bytes", None)
    if stats is None or data is None or "text_start" not in stats:
        values = batch.texts(rows)
        index: dict[str, int] = {}
        codes = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values))
        return codes, list(index)
    start, length = stats["text_start"][rows], stats["text_length"][rows]
    codes = np.empty(len(rows), dtype=np.int64)
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


def _memory_events(decoder: XSpaceDecoder, source: str) -> MemoryEvents:
    headers = decoder.read_headers()
    if not headers.planes:
        decoder.close()
        return _empty(source, has_host_plane=False)
    # one host plane (the first, if a capture ever had two: xprof reads the first too)
    plane_meta = [row for row in headers.metadata if row[0] == 0]
    alloc_ids = [row[1] for row in plane_meta if row[2] == ALLOCATION]
    free_ids = [row[1] for row in plane_meta if row[2] == DEALLOCATION]
    memory_ids = np.asarray(alloc_ids + free_ids, dtype=np.int64)
    if not len(memory_ids):  # no event can be a memory event: nothing to decode
        warnings = list(decoder.warnings)
        decoder.close()
        return _empty(source, warnings=warnings)
    n_plane0 = int(headers.line_counts[headers.line_plane == 0].sum())
    fields = EventFields.allocate(headers)
    # stat name row (all planes' stat names end to end) -> position in MEMORY_STAT_ORDER (-1: not read)
    position = {name: index for index, name in enumerate(MEMORY_STAT_ORDER)}
    name_table = np.asarray([position.get(name, -1) for names in headers.stat_names for name in names] + [-1],
                            dtype=np.int16)
    ref_names = headers.stat_names[0]
    ref_ids = headers.stat_ids[0]
    gathered = _Gathered()
    for batch in decoder.read_events(headers, fields, wanted=MEMORY_STATS):
        event = batch.event
        keep = (event < n_plane0) & np.isin(fields.metadata_id[event], memory_ids)
        keep &= name_table[batch.name_row] >= 0
        rows = np.flatnonzero(keep)
        if len(rows):
            raw, kind = batch.numbers(rows)
            text_rows = np.flatnonzero((kind == STR) | (kind == BYTES))
            text_codes, distinct = _text_codes(batch, rows[text_rows]) if len(text_rows) else (None, [])
            gathered.add(event[rows], name_table[batch.name_row[rows]], raw, kind, text_rows, text_codes, distinct)
        del batch  # one batch's buffer at a time
    warnings = list(decoder.warnings)
    decoder.close()

    plane0 = slice(0, n_plane0)
    metadata_id = fields.metadata_id[plane0]
    is_alloc_all = np.isin(metadata_id, np.asarray(alloc_ids, dtype=np.int64))
    is_memory = is_alloc_all | np.isin(metadata_id, np.asarray(free_ids, dtype=np.int64))
    rows = np.flatnonzero(is_memory)
    if not len(rows):
        return _empty(source, warnings=list(warnings))
    n = len(rows)
    line = fields.line[rows]
    line_ts = headers.line_timestamp_ns[line]
    offset_ps = fields.offset_ps[rows]
    host_lines = (headers.line_plane == 0) & (headers.line_counts > 0)
    origin_ns = int(headers.line_timestamp_ns[host_lines].min())
    columns: dict[str, Any] = {}

    stat_event, stat_name, stat_raw, stat_kind, stat_text = gathered.arrays()
    target = np.searchsorted(rows, stat_event)  # every gathered stat is of a memory event

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
        "is_allocation": is_alloc_all[rows],
        "time_ps": offset_ps + (line_ts - origin_ns) * 1000,
        "offset_ps": offset_ps,
        "line_id": np.asarray([row[1] for row in headers.lines], dtype=np.int64)[line],
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
