"""An XEvent's own fields (metadata_id, offset_ps, duration_ps) and the spans of its stats, decoded straight from
the joined bytes of a batch of events, all events at once with numpy (``tpudoctor.captures.wire``).
"""

from __future__ import annotations

import numpy as np

from tpudoctor.captures import wire

# Tag bytes of fields as protobuf writes them (field number << 3 | wire type)
_TAG_METADATA_ID, _TAG_OFFSET_PS, _TAG_DURATION_PS, _TAG_STAT = 0x08, 0x10, 0x18, 0x22


def event_fields(buffer: wire.Buffer, starts: np.ndarray, ends: np.ndarray, columns: tuple[np.ndarray, ...]):
    """Fill ``columns`` (metadata_id, offset_ps, duration_ps: zeroed int64, one entry per event) from
    the XEvents at the spans; returns their stats' spans (event, start, end).

    Writers emit fields in field-number order (metadata_id 1, offset_ps 2, duration_ps 3, stats 4),
    so each field is read at its expected place for all events at once, a round per field instead
    of a generic walk that decodes every tag; events laid out otherwise (num_occurrences, unknown
    fields, another order) are decoded field by field by ``_event_fields_any_order``."""
    pos = starts.astype(np.int64, copy=True)
    data = buffer.bytes
    for tag, target in zip((_TAG_METADATA_ID, _TAG_OFFSET_PS, _TAG_DURATION_PS), columns, strict=True):
        hit = np.flatnonzero((data[pos] == tag) & (pos < ends))
        if len(hit):
            values, lengths = wire.read_varints(buffer, pos[hit] + 1)
            target[hit] = values.view(np.int64)
            pos[hit] += lengths + 1
    stat_event, stat_start, stat_end = [], [], []
    irregular = pos > ends  # a varint ran past its event: the field walk says what is wrong
    alive = np.flatnonzero(pos < ends)
    while len(alive):
        at = pos[alive]
        is_stat = data[at] == _TAG_STAT
        if not is_stat.all():
            irregular[alive[~is_stat]] = True
            alive, at = alive[is_stat], at[is_stat]
        lengths, length_bytes = wire.read_varints(buffer, at + 1)
        start = at + 1 + length_bytes
        end = start + lengths.astype(np.int64)
        if (end > ends[alive]).any():
            raise wire.WireError("a field runs past the end of its message")
        stat_event.append(alive)
        stat_start.append(start)
        stat_end.append(end)
        pos[alive] = end
        alive = alive[end < ends[alive]]
    spans = (_concat(stat_event), _concat(stat_start), _concat(stat_end))
    if irregular.any():
        spans = _event_fields_any_order(buffer, starts, ends, np.flatnonzero(irregular), columns, spans)
    return spans


def _event_fields_any_order(buffer, starts, ends, irregular, columns, spans):
    """Decode the ``irregular`` events again with the generic field walk (later fields win, as in
    protobuf): their fields into ``columns``, their stat spans in place of the ordered pass's."""
    for target in columns:
        target[irregular] = 0
    keep = ~np.isin(spans[0], irregular)
    stat_event, stat_start, stat_end = [spans[0][keep]], [spans[1][keep]], [spans[2][keep]]
    for alive, field, wire_type, value_pos, value, length in wire.scan_fields(buffer, starts[irregular], ends[irregular]):
        events = irregular[alive]
        is_varint = wire_type == wire.WIRE_VARINT
        as_int = value.view(np.int64)
        for number, target in zip((1, 2, 3), columns, strict=True):
            hit = (field == number) & is_varint
            target[events[hit]] = as_int[hit]
        hit = np.flatnonzero((field == 4) & (wire_type == wire.WIRE_LEN))
        stat_event.append(events[hit])
        stat_start.append(value_pos[hit])
        stat_end.append(value_pos[hit] + length[hit])
    event = np.concatenate(stat_event)
    order = np.argsort(event, kind="stable")  # stats in event order, each event's in file order
    return event[order], np.concatenate(stat_start)[order], np.concatenate(stat_end)[order]


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def metadata_ids(buffer: wire.Buffer, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
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
