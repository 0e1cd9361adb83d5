"""Reads the memory events straight from the bytes of a host plane's XEvents (each event's metadata id by
``xspace.event_wire.metadata_ids``): the fields and XStats of the memory events only (``event_fields``,
``stats``), their string values coded without decoding each one (``code_texts``), gathered batch by batch (``Gathered``), and the gathered stats
made columns (``text_column``, ``allocator_column``, ``dtype_column``); which stats are read (``MEMORY_STAT_ORDER``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpudoctor.captures import wire
from tpudoctor.captures.schema import message_class

# XStat value fields (their field numbers): the kind of each decoded stat value
DOUBLE, UINT64, INT64, STR, BYTES, REF = 2, 3, 4, 5, 6, 7

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
# which is what xprof's memory_profile shows; numbers outside it read "unknown dtype enum (N)". 0 (DT_INVALID) is
# what an event without a type carries: no dtype, read as "" like an absent tf_op or shape (not "INVALID").
DATA_TYPE_NAMES = (
    "", "float", "double", "int32", "uint8", "int16", "int8", "string", "complex64", "int64", "bool",
    "qint8", "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16", "complex128", "half", "resource",
    "variant", "uint32", "uint64", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
    "float8_e5m2fnuz", "int4", "uint4", "int2", "uint2", "float4_e2m1fn",
)
MEMORY_STAT_ORDER = (*INT_STATS, *FLOAT_STATS, *TEXT_STATS, *ALLOCATOR_STATS)

TEXT_BLOCK_BYTES = 1 << 24  # bytes of string values compared at a time
PADDING = bytes(wire.PAD_BYTES)


def event_fields(buffer: wire.Buffer, starts: np.ndarray, ends: np.ndarray):
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


def stats(buffer: wire.Buffer, starts: np.ndarray, ends: np.ndarray):
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


def parse_line(data: bytes):
    """An XLine (its events as bytes) from its bytes; ``WireError`` when they do not decode."""
    try:
        return message_class("XLine", raw=True).FromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
        raise wire.WireError("a line of the host plane does not decode") from exc


class Gathered:
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


def code_texts(data: np.ndarray, start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, list[str]]:
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


def text_column(stat, n, target, stat_name, stat_raw, stat_kind, stat_text, text_list, ref_ids, ref_names):
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


def allocator_column(n, target, stat_name, stat_raw, stat_kind, stat_text, text_list, ref_ids, ref_names):
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


def dtype_column(data_type: np.ndarray) -> pd.Categorical:
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
