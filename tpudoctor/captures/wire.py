"""Vectorised protobuf wire decoding with numpy: many messages of one type, one field at a time.

Every function works on a padded ``uint8`` buffer and an array of positions and decodes the
field at all positions in a handful of whole-array numpy operations: an overlapping 8-byte
window view of the buffer reads the bytes of a varint in one gather, and bit arithmetic finds
its end and packs its 7-bit groups. No Python code runs per event.
"""

from __future__ import annotations

import numpy as np

PAD_BYTES = 24  # reads past a message end (a 10-byte varint, a fixed64) stay inside the buffer
WIRE_VARINT, WIRE_FIXED64, WIRE_LEN, WIRE_FIXED32 = 0, 1, 2, 5


def read_varint(data: bytes, position: int) -> tuple[int | None, int]:
    """One varint at ``position`` of plain bytes (file heads, not event arrays): (value, next position),
    value None where the bytes end first or run past 10 bytes."""
    value = shift = 0
    for _ in range(10):
        if position >= len(data):
            return None, position
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, position
    return None, position
def encode_varint(value: int) -> bytes:
    """A non-negative integer as protobuf varint bytes (for writing captures, as the benchmarks do)."""
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


_HIGH_BITS = np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F)


class WireError(ValueError):
    """The bytes do not follow the protobuf wire format where a message was expected."""


class Buffer:
    """A byte buffer padded with zeros, with an overlapping little-endian 8-byte window view."""

    def __init__(self, data: bytes, *, padded: bool = False):
        """``padded``: ``data`` already ends with ``PAD_BYTES`` zeros, so it is viewed, not copied."""
        if padded:
            self.size = len(data) - PAD_BYTES
            self.bytes = np.frombuffer(data, dtype=np.uint8)
        else:
            self.size = len(data)
            self.bytes = np.zeros(len(data) + PAD_BYTES, dtype=np.uint8)
            self.bytes[: len(data)] = np.frombuffer(data, dtype=np.uint8)
        # windows[i] = the 8 bytes starting at byte i, as one little-endian uint64
        self.windows = np.ndarray(shape=(len(self.bytes) - 7,), dtype="<u8", buffer=self.bytes.data, strides=(1,))

    def data(self) -> bytes:
        return self.bytes[: self.size].tobytes()


def read_varints(buf: Buffer, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode the varint at each position -> (values as uint64, byte length of each varint)."""
    first = buf.bytes[pos]
    if not (first >= 0x80).any():  # all one byte (tags, small ids and lengths): the common case
        return first.astype(np.uint64), np.ones(len(pos), dtype=np.int64)
    window = buf.windows[pos]
    stops = ~window & _HIGH_BITS  # high bit clear = last byte of the varint
    values = np.zeros(len(pos), dtype=np.uint64)
    lengths = np.zeros(len(pos), dtype=np.int64)
    short = stops != 0
    if short.all():
        _pack(window, stops, values, lengths)
    else:
        if short.any():
            _pack(window[short], stops[short], values, lengths, where=short)
        long = np.flatnonzero(~short)  # 9 or 10 bytes: 56 bits from the window, the rest after it
        low = np.zeros(len(long), dtype=np.uint64)
        for index in range(8):
            low |= ((window[long] >> np.uint64(8 * index)) & _LOW7) << np.uint64(7 * index)
        byte8 = buf.bytes[pos[long] + 8].astype(np.uint64)
        byte9 = buf.bytes[pos[long] + 9].astype(np.uint64)
        ten = byte8 >= 0x80
        if (ten & (byte9 >= 0x80)).any():
            raise WireError("a varint is longer than 10 bytes")
        low |= (byte8 & _LOW7) << np.uint64(56)
        low |= np.where(ten, (byte9 & np.uint64(1)) << np.uint64(63), np.uint64(0))
        values[long] = low
        lengths[long] = np.where(ten, 10, 9)
    return values, lengths


def varint_lengths(buf: Buffer, pos: np.ndarray) -> np.ndarray:
    """The byte length of the varint at each position, its value left undecoded; 11 where it runs
    past 10 bytes (no varint)."""
    stops = ~buf.windows[pos] & _HIGH_BITS  # high bit clear = last byte of the varint
    lowest = np.negative(stops)
    lowest &= stops
    lengths = np.bitwise_count((lowest - np.uint64(1)) & _HIGH_BITS).astype(np.int64)
    lengths += 1
    long = np.flatnonzero(stops == 0)  # 9 or 10 bytes: past the 8-byte window
    if len(long):
        byte8, byte9 = buf.bytes[pos[long] + 8], buf.bytes[pos[long] + 9]
        lengths[long] = np.where(byte8 < 0x80, 9, np.where(byte9 < 0x80, 10, 11))
    return lengths


def _pack(window, stops, values, lengths, where=None) -> None:
    # in-place arithmetic: fresh arrays per step would cost more in page faults than in math
    lowest = np.negative(stops)
    lowest &= stops  # the lowest set bit: 1 << (8 * (length - 1) + 7)
    length = np.bitwise_count(lowest - np.uint64(1) & _HIGH_BITS)
    lowest <<= np.uint64(1)
    lowest -= np.uint64(1)  # now a mask over the varint's bytes
    x = window & lowest
    x &= np.uint64(0x7F7F7F7F7F7F7F7F)
    # pack the 7-bit groups: pairs of bytes into 14 bits, pairs of those into 28, then 56
    for keep, shift in ((0x007F007F007F007F, 1), (0x00003FFF00003FFF, 2), (0x000000000FFFFFFF, 4)):
        high = x & np.uint64(~keep & 0xFFFFFFFFFFFFFFFF)
        high >>= np.uint64(shift)
        x &= np.uint64(keep)
        x |= high
    if where is None:
        values[:] = x
        lengths[:] = length
        lengths += 1
    else:
        values[where] = x
        lengths[where] = length.astype(np.int64) + 1


def read_fixed64(buf: Buffer, pos: np.ndarray) -> np.ndarray:
    """The little-endian 8 bytes at each position as uint64 (view as float64 for doubles)."""
    return buf.windows[pos].copy()


def scan_fields(buf: Buffer, starts: np.ndarray, ends: np.ndarray):
    """Walk the fields of every message ``buf[starts[i]:ends[i]]`` together, one field per round.

    Yields ``(message_index, field_number, wire_type, value_pos, value, length)`` arrays for the
    next field of every unfinished message: ``value`` is the varint value (varint fields),
    ``length`` the payload length (length-delimited) and ``value_pos`` where the value or
    payload starts.
    """
    current = starts.astype(np.int64, copy=True)
    alive = np.flatnonzero(current < ends)
    while len(alive):
        tag_pos = current[alive]
        tags = buf.bytes[tag_pos]
        if (tags >= 0x80).any():  # field numbers above 15: a multi-byte tag
            tag_values, tag_lengths = read_varints(buf, tag_pos)
        else:
            tag_values, tag_lengths = tags.astype(np.uint64), np.ones(len(alive), dtype=np.int64)
        field_numbers = (tag_values >> np.uint64(3)).astype(np.int64)
        wire_types = (tag_values & np.uint64(7)).astype(np.int64)
        value_pos = tag_pos + tag_lengths
        is_varint = wire_types == WIRE_VARINT
        is_len = wire_types == WIRE_LEN
        values, varint_lengths = read_varints(buf, value_pos)
        length = np.where(is_len, values.astype(np.int64), 0)
        advance = np.where(is_varint, varint_lengths, length)
        value_pos = np.where(is_len, value_pos + varint_lengths, value_pos)
        is_fixed64 = wire_types == WIRE_FIXED64
        advance[is_fixed64] = 8
        advance[wire_types == WIRE_FIXED32] = 4
        if not (is_varint | is_len | is_fixed64 | (wire_types == WIRE_FIXED32)).all() or (field_numbers == 0).any():
            raise WireError("unexpected protobuf wire type or field number 0")
        next_pos = value_pos + advance
        if (next_pos > ends[alive]).any() or (length < 0).any():
            raise WireError("a field runs past the end of its message")
        yield alive, field_numbers, wire_types, value_pos, values, length
        current[alive] = next_pos
        more = next_pos < ends[alive]
        alive = alive[more]
