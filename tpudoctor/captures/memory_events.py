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
(a number) or ``allocator_name``. A free carries no size of its own on TPU: ``match_frees`` gives it
its allocation's (by ``addr``).

The capture is decoded by the profile's columnar decoder (``captures.xspace``), the other events left out before
they are decoded: ``memory_events_of`` makes the first host plane's memory events of a decoded ``HostProfile`` this
table, times and text order counted from the lines' events in the file (``HostProfile.selected_events``); nothing
here reads bytes.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pandas as pd

from tpudoctor.captures.xspace.host_profile import HostProfile

HOST_PLANE = "/host:CPU"
ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"

COLUMNS = ("allocator", "is_allocation", "time_ps", "offset_ps", "line_id", "heap_bytes", "stack_bytes",
           "free_bytes", "lifetime_peak_bytes", "fragmentation", "requested_bytes", "allocation_bytes", "addr",
           "tf_op", "shape", "dtype", "region_type", "group_id", "annotation_step", "file_order")

# stat name -> column, for the stats read as integers (absent: 0, or missing for the nullable two)
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
}
NULLABLE_COLUMNS = ("group_id", "annotation_step")
TEXT_BATCH_EVENTS = 1 << 17  # a line's events in runs of this many: the text categories' order (``_text_order``)
TEXT_STATS = {"tf_op": "tf_op", "shape": "shape", "region_type": "region_type"}
# the allocator's id stats, in the order one wins over another where an event carries several
ALLOCATOR_STATS = ("allocator_name", "device_ordinal", "index_on_host")
# what the decoder reads into columns for the memory events: stat name -> kind
MEMORY_STATS: dict[str, str] = {**{name: "int" for name in INT_STATS}, "data_type": "int",
                                "fragmentation": "float", **{name: "str" for name in TEXT_STATS},
                                "allocator_name": "str", "device_ordinal": "int", "index_on_host": "int"}

# TensorFlow's DataType enum (tensorflow/core/framework/types.proto) as DataTypeString writes it,
# which is what xprof's memory_profile shows; numbers outside it read "unknown dtype enum (N)". 0 (DT_INVALID) is
# what an event without a type carries: no dtype, read as "" like an absent tf_op or shape (not "INVALID").
DATA_TYPE_NAMES = (
    "", "float", "double", "int32", "uint8", "int16", "int8", "string", "complex64", "int64", "bool",
    "qint8", "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16", "complex128", "half", "resource",
    "variant", "uint32", "uint64", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
    "float8_e5m2fnuz", "int4", "uint4", "int2", "uint2", "float4_e2m1fn",
)


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
    """The memory events of a local ``.xplane.pb`` alone (``read_memory_capture`` reads them with the programs);
    ``InputError`` where it is not a readable XSpace."""
    from tpudoctor.captures.xspace import read_plane_events

    where = source or os.fspath(path)
    host = read_plane_events(os.fspath(path), [HOST_PLANE], MEMORY_STATS, event_names=[ALLOCATION, DEALLOCATION],
                             source=where)
    return memory_events_of(host, where)


def memory_events_from_bytes(data: bytes, *, source: str) -> MemoryEvents:
    """``read_memory_events`` for a serialized XSpace held in memory."""
    from tpudoctor.captures.xspace import LoadOptions, decode_host

    host = decode_host(data, hostname="", source=source,
                       options=LoadOptions(stats=dict(MEMORY_STATS), planes=frozenset([HOST_PLANE]),
                                           events=frozenset([ALLOCATION, DEALLOCATION])))
    return memory_events_of(host, source)


def memory_events_of(host: HostProfile, source: str) -> MemoryEvents:
    """The memory events of the first ``/host:CPU`` plane of a decoded capture (decoded with ``MEMORY_STATS`` among
    its stats), in file order; times from the earliest line of that plane with any event."""
    warnings = list(host.warnings)
    with_columns(host, MEMORY_STATS)
    planes = host.planes
    host_planes = planes.loc[planes["plane_name"] == HOST_PLANE, "plane_id"].tolist()
    if not host_planes:
        return empty_memory_events(source, has_host_plane=False, warnings=warnings)
    plane_id = host_planes[0]
    lines = host.lines
    counts = lines["n_events"].to_numpy(np.int64)
    first_row = np.concatenate(([0], np.cumsum(counts)))
    # a load that left events out (memory_capture's) says where the kept ones were: times and the text order
    # count from the lines' events in the file, as a whole decode's do
    selected = host.selected_events
    counts_in_file = counts if selected is None else selected.line_events_in_file
    on_plane = np.flatnonzero(lines["plane_id"].to_numpy() == plane_id)
    if not len(on_plane):
        return empty_memory_events(source, warnings=warnings)
    low, high = int(first_row[on_plane[0]]), int(first_row[on_plane[-1] + 1])
    events = host.events.iloc[low:high]
    names = events["name"]
    is_memory = names.isin([ALLOCATION, DEALLOCATION]).to_numpy(dtype=bool)
    if not is_memory.any():
        return empty_memory_events(source, warnings=warnings)
    rows = np.flatnonzero(is_memory)
    memory = events.iloc[rows]
    line_ts = lines["timestamp_ns"].to_numpy(np.int64)
    with_events = on_plane[counts_in_file[on_plane] > 0]
    origin_ns = int(line_ts[with_events].min())
    line_row = np.repeat(on_plane, counts[on_plane])[rows]
    start_ps = memory["start_ps"].to_numpy(np.int64)
    offset_ps = start_ps - (line_ts[line_row] - host.time_origin_ns) * 1000
    n = len(memory)
    # the batch of TEXT_BATCH_EVENTS events of its line each event is in: the text categories' first key
    if selected is None:
        position = rows - (first_row[:-1] - low)[line_row]
    else:
        position = selected.position_in_line[low:high][rows]
    batch = line_row * (1 + int(counts_in_file.max()) // TEXT_BATCH_EVENTS) + position // TEXT_BATCH_EVENTS
    order = _text_order(memory, batch)
    columns: dict[str, object] = {
        "allocator": _allocator_column(memory, order),
        "is_allocation": (memory["name"] == ALLOCATION).to_numpy(dtype=bool),
        "time_ps": offset_ps + (line_ts[line_row] - origin_ns) * 1000,
        "offset_ps": offset_ps,
        "line_id": lines["line_id"].to_numpy(np.int64)[line_row],
    }
    for stat, column in INT_STATS.items():
        values = memory[stat]
        if column in NULLABLE_COLUMNS:
            columns[column] = pd.array(values.to_numpy(), dtype="Int64")
        else:
            columns[column] = values.to_numpy(dtype=np.int64, na_value=0)
    columns["fragmentation"] = memory["fragmentation"].fillna(0.0).to_numpy(np.float64)
    for stat, column in TEXT_STATS.items():
        columns[column] = _text_column(memory[stat], order)
    data_type = memory["data_type"].to_numpy(dtype=np.int64, na_value=0)
    columns["dtype"] = _dtype_column(data_type)
    columns["file_order"] = np.arange(n, dtype=np.int64)
    frame = pd.DataFrame({name: columns[name] for name in COLUMNS}, copy=False)
    return MemoryEvents(source=source, frame=frame, time_origin_ns=origin_ns, warnings=warnings)


def with_columns(host: HostProfile, stats: dict[str, str]) -> None:
    """Every stat of ``stats`` a column of ``host.events``, all-missing where no event of the capture has it."""
    from tpudoctor.captures.xspace.tables import missing_column

    for name, kind in stats.items():
        if name not in host.events.columns:
            host.events[name] = missing_column(kind, len(host.events))


def _text_order(memory: pd.DataFrame, batch: np.ndarray) -> dict[str, int]:
    """Each text value of the memory events' string stats -> its rank among them all: by the batch where it first
    occurs, then by its length and bytes in UTF-8 (the order the categories have always had)."""
    first_batch: dict[str, int] = {}
    for stat in (*TEXT_STATS, "allocator_name"):
        values = memory[stat]
        codes = values.cat.codes.to_numpy(np.int64)
        present = np.flatnonzero(codes >= 0)
        if not len(present):
            continue
        used, first = np.unique(codes[present], return_index=True)
        names = values.cat.categories
        for code, row in zip(used.tolist(), present[first].tolist(), strict=True):
            name = str(names[code])
            first_batch[name] = min(first_batch.get(name, int(batch[row])), int(batch[row]))
    ranked = sorted(first_batch, key=lambda name: (first_batch[name], len(name.encode()), name.encode()))
    return {name: rank for rank, name in enumerate(ranked)}


def _text_column(values: pd.Series, order: dict[str, int]) -> pd.Categorical:
    """A string stat as a categorical, "" where absent, its categories "" then in ``order``."""
    codes = values.cat.codes.to_numpy(np.int64)
    names = [str(name) for name in values.cat.categories]
    used = np.unique(codes[codes >= 0]).tolist()
    ranked = sorted(used, key=lambda code: order[names[code]])
    recode = np.full(len(names) + 1, -1, dtype=np.int64)
    recode[ranked] = np.arange(len(ranked))
    return _categorical(np.where(codes >= 0, recode[np.maximum(codes, 0)], -1), [names[code] for code in ranked])


def _allocator_column(memory: pd.DataFrame, order: dict[str, int]) -> pd.Categorical:
    """The allocator id of each event: ``allocator_name`` (text), else ``device_ordinal``, else ``index_on_host``
    (numbers, as text); "" where the event has none. Numbers come first among the categories (ascending), then
    the names in ``order``."""
    name = memory["allocator_name"].astype(object).to_numpy()
    ordinal, index = memory["device_ordinal"], memory["index_on_host"]
    present = (ordinal.notna() | index.notna()).to_numpy(dtype=bool)
    number = np.where(ordinal.notna().to_numpy(dtype=bool), ordinal.to_numpy(dtype=np.int64, na_value=0),
                      index.to_numpy(dtype=np.int64, na_value=0))
    ids = np.full(len(memory), -1, dtype=np.int64)
    used = np.unique(number[present])
    labels = [str(value) for value in used.tolist()]
    ids[present] = np.searchsorted(used, number[present])
    named = np.flatnonzero(pd.notna(name))
    if len(named):
        texts = sorted({str(value) for value in name[named].tolist()}, key=order.__getitem__)
        position = {text: len(labels) + index for index, text in enumerate(texts)}
        ids[named] = [position[str(value)] for value in name[named].tolist()]
        labels.extend(texts)
    return _categorical(ids, labels)


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
