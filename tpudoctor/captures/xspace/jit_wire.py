"""XLine and XEvent bytes decoded one field after another by machine code that numba compiles from this
module (and caches on disk): the same fields and stats as the numpy decoder (``decoder``, ``event_wire``),
in one pass over the bytes instead of a round of whole-array operations per field.

Imported only when numba is installed and a capture is big enough for the compiled code to pay
(``decoder.jit_kernels``); without numba the numpy decoder does the same work.
"""

from __future__ import annotations

import numpy as np
from numba import njit

OK, TRUNCATED, BAD_WIRE_TYPE, FULL, WIDE = 0, 1, 2, 3, 4
NARROW_ID_MIN, NARROW_ID_MAX = -(1 << 15), (1 << 15) - 1  # event metadata ids kept in int16
# XStat value fields (field numbers), as in ``decoder``
_DOUBLE, _UINT64, _INT64, _STR, _BYTES, _REF = 2, 3, 4, 5, 6, 7
_LINE_EVENTS_TAG = 0x22  # XLine.events: field 4, length-delimited


@njit(cache=True, nogil=True)
def _varint(buf, pos, end):
    """(value, position after it); position -1 where the bytes end first or it runs past 10 bytes."""
    if pos >= end:
        return np.uint64(0), -1
    byte = buf[pos]
    pos += 1
    value = np.uint64(byte & 0x7F)
    shift = np.uint64(7)
    while byte >= 0x80:  # a while loop: numba's code for a bounded for loop with returns in it is several times slower
        if pos >= end or shift > np.uint64(63):
            return value, -1
        byte = buf[pos]
        pos += 1
        value |= np.uint64(byte & 0x7F) << shift
        shift += np.uint64(7)
    return value, pos


@njit(cache=True, nogil=True)
def _skip(buf, pos, end, wire_type):
    """Position after a field's value of this wire type; -1 where it is malformed or runs past ``end``."""
    if wire_type == 0:
        _, pos = _varint(buf, pos, end)
        return pos
    if wire_type == 2:
        length, pos = _varint(buf, pos, end)
        if pos < 0 or length > np.uint64(end - pos):
            return -1
        return pos + np.int64(length)
    if wire_type == 1:
        return pos + 8 if pos + 8 <= end else -1
    if wire_type == 5:
        return pos + 4 if pos + 4 <= end else -1
    return -1


@njit(cache=True, nogil=True)
def line_header(buf):
    """An XLine's own fields: (id, timestamp_ns, duration_ps, name start, name length, display_name
    start, display_name length, number of events, error); later fields win, as in protobuf."""
    end = len(buf)
    pos = 0
    line_id = timestamp_ns = duration_ps = 0
    name_start = name_length = display_start = display_length = 0
    n_events = 0
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        if pos < 0:
            return line_id, timestamp_ns, duration_ps, name_start, name_length, display_start, display_length, n_events, TRUNCATED
        field = tag >> np.uint64(3)
        wire_type = np.int64(tag & np.uint64(7))
        if field == 0:
            return line_id, timestamp_ns, duration_ps, name_start, name_length, display_start, display_length, n_events, BAD_WIRE_TYPE
        if wire_type == 0 and (field == 1 or field == 3 or field == 9):
            value, pos = _varint(buf, pos, end)
            if pos < 0:
                return line_id, timestamp_ns, duration_ps, name_start, name_length, display_start, display_length, n_events, TRUNCATED
            if field == 1:
                line_id = np.int64(value)
            elif field == 3:
                timestamp_ns = np.int64(value)
            else:
                duration_ps = np.int64(value)
            continue
        if wire_type == 2 and (field == 2 or field == 11 or field == 4):
            length, pos = _varint(buf, pos, end)
            if pos < 0 or length > np.uint64(end - pos):
                return line_id, timestamp_ns, duration_ps, name_start, name_length, display_start, display_length, n_events, TRUNCATED
            if field == 2:
                name_start, name_length = pos, np.int64(length)
            elif field == 11:
                display_start, display_length = pos, np.int64(length)
            else:
                n_events += 1
            pos += np.int64(length)
            continue
        pos = _skip(buf, pos, end, wire_type)
        if pos < 0:
            return line_id, timestamp_ns, duration_ps, name_start, name_length, display_start, display_length, n_events, TRUNCATED
    return line_id, timestamp_ns, duration_ps, name_start, name_length, display_start, display_length, n_events, OK


@njit(cache=True, nogil=True)
def _fixed64(buf, pos):
    value = np.uint64(0)
    for index in range(8):
        value |= np.uint64(buf[pos + index]) << np.uint64(8 * index)
    return value


@njit(cache=True, nogil=True)
def _small(buf, pos, end):
    """A varint that is mostly one byte (a tag, a length) as int64: (value, position after it), -1 as ``_varint``."""
    if pos < end:
        byte = buf[pos]
        if byte < 0x80:
            return np.int64(byte), pos + 1
    value, pos = _varint(buf, pos, end)
    return np.int64(value), pos


@njit(cache=True, nogil=True)
def decode_line_events(buf, pos, end, max_events, row, text_base, narrow_ids, metadata_id, offset_ps, duration_ps,
                       meta_row, meta_row_by_id, meta_ids, meta_row_offset,
                       stat_row_by_id, stat_ids, stat_row_offset, wanted_row, out_event, out_name_row, out_kind, out_raw,
                       out_text_start, out_text_length, n_stats):
    """Decode the events of the XLine in ``buf[pos:end]`` from ``pos`` on, at most ``max_events``:
    their fields into ``metadata_id``/``offset_ps``/``duration_ps`` from ``row`` on, their stats
    whose name row is ``wanted_row`` into the ``out_*`` arrays from ``n_stats`` on (text positions
    plus ``text_base``), and each event's row of the event metadata into ``meta_row``. A stat's name
    row is ``stat_row_by_id[its id]`` where that table is given (a plane's ids are small counters), else
    found in the plane's sorted ``stat_ids`` (rows from ``stat_row_offset``); an event's metadata row
    likewise. Event metadata ids go to ``metadata_id`` (int64) where it is given, else to ``narrow_ids``
    (int16: ids are small counters, and the events table keeps them so). Returns (events decoded,
    position to go on from, stats now, error); ``FULL`` when the stat arrays have no room for the next
    event (grow them and call again from there), ``WIDE`` when the next event's id does not fit
    ``narrow_ids`` (widen them into ``metadata_id`` and call again from there)."""
    capacity = len(out_event)
    n_events = 0
    while pos < end and n_events < max_events:
        field_start = pos
        tag, pos = _small(buf, pos, end)
        if pos < 0:
            return n_events, field_start, n_stats, TRUNCATED
        if tag != _LINE_EVENTS_TAG:
            if 0 <= tag < 8:
                return n_events, field_start, n_stats, BAD_WIRE_TYPE
            pos = _skip(buf, pos, end, tag & 7)
            if pos < 0:
                return n_events, field_start, n_stats, TRUNCATED
            continue
        length, pos = _small(buf, pos, end)
        if pos < 0 or length < 0 or length > end - pos:
            return n_events, field_start, n_stats, TRUNCATED
        event_end = pos + length
        if n_stats + length // 2 + 1 > capacity:  # a stat takes 2 bytes at least
            return n_events, field_start, n_stats, FULL
        event_row = row + n_events
        event_first_stat = n_stats
        event_metadata_id = event_offset = event_duration = 0
        while pos < event_end:
            tag, pos = _small(buf, pos, event_end)
            if pos < 0:
                return n_events, field_start, n_stats, TRUNCATED
            if tag == 0x08 or tag == 0x10 or tag == 0x18:  # metadata_id, offset_ps, duration_ps: varints
                value, pos = _varint(buf, pos, event_end)
                if pos < 0:
                    return n_events, field_start, n_stats, TRUNCATED
                if tag == 0x08:
                    event_metadata_id = np.int64(value)
                elif tag == 0x10:
                    event_offset = np.int64(value)
                else:
                    event_duration = np.int64(value)
                continue
            if tag == 0x22:  # a stat
                stat_length, pos = _small(buf, pos, event_end)
                if pos < 0 or stat_length < 0 or stat_length > event_end - pos:
                    return n_events, field_start, n_stats, TRUNCATED
                stat_end = pos + stat_length
                stat_metadata_id = 0
                kind = 0
                raw = np.uint64(0)
                text_start = text_length = 0
                while pos < stat_end:
                    tag, pos = _small(buf, pos, stat_end)
                    if pos < 0:
                        return n_events, field_start, n_stats, TRUNCATED
                    if tag == 0x08 or tag == 0x18 or tag == 0x20 or tag == 0x38:  # metadata_id, uint64, int64, ref
                        value, pos = _varint(buf, pos, stat_end)
                        if pos < 0:
                            return n_events, field_start, n_stats, TRUNCATED
                        if tag == 0x08:
                            stat_metadata_id = np.int64(value)
                        else:
                            kind = tag >> 3
                            raw = value
                    elif tag == 0x11:  # double
                        if pos + 8 > stat_end:
                            return n_events, field_start, n_stats, TRUNCATED
                        kind = _DOUBLE
                        raw = _fixed64(buf, pos)
                        pos += 8
                    elif tag == 0x2A or tag == 0x32:  # str, bytes
                        text, pos = _small(buf, pos, stat_end)
                        if pos < 0 or text < 0 or text > stat_end - pos:
                            return n_events, field_start, n_stats, TRUNCATED
                        kind = tag >> 3
                        text_start, text_length = pos, text
                        pos += text
                    else:
                        if 0 <= tag < 8:
                            return n_events, field_start, n_stats, BAD_WIRE_TYPE
                        pos = _skip(buf, pos, stat_end, tag & 7)
                        if pos < 0:
                            return n_events, field_start, n_stats, TRUNCATED
                name_row = -1  # the lookups written out here: a call with arrays costs their reference counts
                if len(stat_row_by_id):
                    if 0 <= stat_metadata_id < len(stat_row_by_id):
                        name_row = stat_row_by_id[stat_metadata_id]
                elif len(stat_ids):
                    at = np.searchsorted(stat_ids, stat_metadata_id)
                    if at < len(stat_ids) and stat_ids[at] == stat_metadata_id:
                        name_row = stat_row_offset + at
                if name_row >= 0 and wanted_row[name_row]:
                    out_event[n_stats] = event_row
                    out_name_row[n_stats] = name_row
                    out_kind[n_stats] = kind
                    out_raw[n_stats] = raw
                    out_text_start[n_stats] = text_start + text_base
                    out_text_length[n_stats] = text_length
                    n_stats += 1
                continue
            if 0 <= tag < 8:
                return n_events, field_start, n_stats, BAD_WIRE_TYPE
            pos = _skip(buf, pos, event_end, tag & 7)
            if pos < 0:
                return n_events, field_start, n_stats, TRUNCATED
        if len(metadata_id):
            metadata_id[event_row] = event_metadata_id
        elif NARROW_ID_MIN <= event_metadata_id <= NARROW_ID_MAX:
            narrow_ids[event_row] = event_metadata_id
        else:
            return n_events, field_start, event_first_stat, WIDE
        event_meta_row = -1
        if len(meta_row_by_id):
            if 0 <= event_metadata_id < len(meta_row_by_id):
                event_meta_row = meta_row_by_id[event_metadata_id]
        elif len(meta_ids):
            at = np.searchsorted(meta_ids, event_metadata_id)
            if at < len(meta_ids) and meta_ids[at] == event_metadata_id:
                event_meta_row = meta_row_offset + at
        meta_row[event_row] = event_meta_row
        offset_ps[event_row] = event_offset
        duration_ps[event_row] = event_duration
        n_events += 1
    return n_events, pos, n_stats, OK
