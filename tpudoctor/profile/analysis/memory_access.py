"""Bytes per memory of an XLA op from its ``memory_access_breakdown`` (the serialized op metadata of the device
planes), decoded without the proto classes, and looked up for each op by its plane and metadata id.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# memory_access_breakdown: repeated MemoryAccessed{operation_type 1 (READ=1, WRITE=2),
# memory_space 2, bytes_accessed 3}; memory spaces as xprof numbers them.
MEMORY_SPACE_HBM, MEMORY_SPACE_CMEM, MEMORY_SPACE_VMEM = 1, 2, 3
_READ, _WRITE = 1, 2
BYTE_COLUMNS = ("hbm_bytes", "cmem_read_bytes", "cmem_write_bytes", "vmem_read_bytes", "vmem_write_bytes")


def decode_memory_access_breakdown(raw: bytes | None) -> dict[str, int]:
    """Bytes per roof (``BYTE_COLUMNS``) of one op's serialized ``memory_access_breakdown``."""
    out = dict.fromkeys(BYTE_COLUMNS, 0)
    if not isinstance(raw, (bytes, bytearray)) or not raw:
        return out
    for entry in _length_delimited(bytes(raw), 1):
        fields = _varints(entry)
        operation, space, nbytes = fields.get(1, 0), fields.get(2, 0), fields.get(3, 0)
        if space == MEMORY_SPACE_HBM:
            out["hbm_bytes"] += nbytes
        elif space in (MEMORY_SPACE_CMEM, MEMORY_SPACE_VMEM):
            prefix = "cmem" if space == MEMORY_SPACE_CMEM else "vmem"
            if operation == _READ:
                out[f"{prefix}_read_bytes"] += nbytes
            elif operation == _WRITE:
                out[f"{prefix}_write_bytes"] += nbytes
    return out


def breakdown_per_metadata(host) -> pd.DataFrame:
    """One row per (plane, metadata id) of the host's op metadata: its bytes per roof (``BYTE_COLUMNS``) and whether
    it has a breakdown at all; decoded once per distinct metadata, not per op execution."""
    meta = host.event_metadata
    rows = {"plane_id": meta["plane_id"].to_numpy(np.int64), "metadata_id": meta["metadata_id"].to_numpy(np.int64)}
    raw = meta["memory_access_breakdown"].tolist() if "memory_access_breakdown" in meta.columns else [None] * len(meta)
    # each distinct breakdown decoded once (a file of joined XSpaces repeats every plane's metadata)
    distinct: dict[bytes, int] = {}
    which = np.fromiter((distinct.setdefault(bytes(v), len(distinct)) if isinstance(v, (bytes, bytearray)) and v
                         else -1 for v in raw), dtype=np.int64, count=len(raw))
    decoded = [decode_memory_access_breakdown(value) for value in distinct]
    for col in BYTE_COLUMNS:
        per_distinct = np.fromiter((d[col] for d in decoded), dtype=np.float64, count=len(decoded))
        rows[col] = np.where(which >= 0, np.append(per_distinct, 0.0)[which], 0.0)
    rows["has_breakdown"] = which >= 0
    return pd.DataFrame(rows)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            break
    raise ValueError("truncated or overlong varint")


def _fields(data: bytes):
    """(field number, wire type, value) of a protobuf message: int for varints, bytes for LEN."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _read_varint(data, pos)
        elif wire_type == 2:
            length, pos = _read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire_type == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire_type == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        yield number, wire_type, value


def _length_delimited(data: bytes, number: int) -> list[bytes]:
    try:
        return [v for n, w, v in _fields(data) if n == number and w == 2]
    except ValueError:
        return []  # a damaged breakdown counts as none: the op falls back to bytes_accessed


def _varints(data: bytes) -> dict[int, int]:
    try:
        return {n: v for n, w, v in _fields(data) if w == 0}
    except ValueError:
        return {}
