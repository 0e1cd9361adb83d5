"""Decode one host's XSpace bytes into columnar pandas tables (a ``HostProfile``).

How (measured in ``benchmarks/bench_profile_load.py`` and ``bench_profile_phases.py``; see the
module docstring of ``tpudoctor.profile``): protobuf's C parser (upb) reads the file against a
schema in which ``XPlane.lines`` and ``XLine.events`` are ``repeated bytes``, so it finds every
line's and event's bytes without building a message per event; the events of about 128 k at a
time are joined into one buffer and their fields and stats decoded together with numpy
(``tpudoctor.profile.wire``), each field read where protobuf writes it. A large local file is
walked plane by plane and read line by line. Plane/line headers and the metadata tables
(thousands of entries, not millions) are read as ordinary messages.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd

from tpudoctor.errors import InputError
from tpudoctor.profile import wire
from tpudoctor.profile.schema import message_class

# Stats copied into ``HostProfile.events`` columns: name -> kind. An event's own stat wins over
# the same stat on its event metadata (where XLA puts static op facts: hlo_category, flops...).
EVENT_STAT_COLUMNS: dict[str, str] = {
    "step_num": "int",
    "iter_num": "int",
    "group_id": "int",
    "step_name": "str",
    "run_id": "int",
    "program_id": "uint",
    "replica_id": "int",
    "correlation_id": "uint",
    "device_offset_ps": "int",
    "device_duration_ps": "int",
    "self_duration_ps": "int",
    "hlo_category": "str",
    "hlo_op": "str",
    "hlo_module": "str",
    "tf_op": "str",
    "long_name": "str",
    "source": "str",
    "kernel_details": "str",
    "flops": "int",
    "model_flops": "int",
    "bytes_accessed": "int",
    "tf_function_call": "str",
    "tracing_count": "int",
    "is_eager": "int",
    "_r": "int",
    "_pt": "int",
    "_p": "uint",
    "_ct": "int",
    "_c": "uint",
}
STAT_KINDS = ("int", "uint", "float", "str")
# Always columns of ``events``, all-missing when the capture lacks them; the other stats of
# EVENT_STAT_COLUMNS are columns only where the capture has them (a frame narrower by a dozen
# columns is much cheaper to filter: every boolean selection copies every column).
CORE_STAT_COLUMNS = ("step_num", "group_id", "program_id", "hlo_category", "tf_op", "long_name", "flops",
                     "bytes_accessed")

DEVICE_PLANE_PREFIXES = ("/device:TPU:", "/device:GPU:")
BIG_BYTES_STAT = 4096  # plane/metadata stats with longer bytes values (HloProtos) keep only their size

# XStat value fields -> a small code used in the decoded stat table
_DOUBLE, _UINT64, _INT64, _STR, _BYTES, _REF = 2, 3, 4, 5, 6, 7


@dataclasses.dataclass
class HostProfile:
    """One host's capture as DataFrames. Times: ``*_ps`` picoseconds, ``*_ns`` nanoseconds.

    ``plane_id`` is the plane's position in the file (unique; the XPlane ``id`` field is not:
    host planes usually all have id 0 - it is kept as ``xplane_id``). ``events.start_ps`` is
    picoseconds since ``time_origin_ns`` (absolute picoseconds since the epoch overflow int64).
    """

    hostname: str
    source: str
    planes: pd.DataFrame
    lines: pd.DataFrame
    events: pd.DataFrame
    event_metadata: pd.DataFrame
    plane_stats: dict[int, dict[str, object]]
    time_origin_ns: int
    file_size_bytes: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    metadata_stats: frozenset[str] = frozenset()
    """Stats read from ``event_metadata`` instead of an ``events`` column (``stat_at``): asked for
    with ``metadata_stats=`` and carried by no event itself, as XLA's op facts (flops...) are."""

    def stat_at(self, name: str, rows: np.ndarray):
        """Stat ``name`` at event ``rows`` as a pandas array: the events' column, or for a stat of
        ``metadata_stats`` each event's metadata value; None where the capture has no such stat."""
        if name in self.events.columns:
            return self.events[name].array.take(rows)
        if name not in self.metadata_stats:
            return None
        plane = self.events["plane_id"].to_numpy()[rows]
        metadata_id = self.events["metadata_id"].to_numpy()[rows].astype(np.int64)
        meta_rows = self._metadata_rows.lookup(plane, metadata_id)
        return self._metadata_values(name).take(meta_rows, allow_fill=True)

    @functools.cached_property
    def _metadata_rows(self) -> _RowLookup:
        """The row lookup of ``event_metadata``, built once (analyses read the stats a chunk at a time)."""
        return _metadata_row_lookup(self.event_metadata)

    def _metadata_values(self, name: str) -> pd.arrays.IntegerArray:
        """A metadata stat as numbers, one per ``event_metadata`` row, converted once per host."""
        converted = self.__dict__.setdefault("_metadata_numbers", {})
        if name not in converted:
            converted[name] = _metadata_numbers(self.event_metadata[name], EVENT_STAT_COLUMNS.get(name, "int"))
        return converted[name]

    def events_on(self, plane_name: str, line_name: str | None = None) -> pd.DataFrame:
        """Events of the named plane (and line), e.g. ``events_on("/device:TPU:0", "XLA Ops")``.

        Rows are stored line after line, so this is a slice of ``events`` (no copy of the columns)
        when the lines asked for are adjacent, as a plane's lines always are.
        """
        lines = self.lines
        first_rows = np.concatenate(([0], np.cumsum(lines["n_events"].to_numpy())))
        names = self.planes.set_index("plane_id")["plane_name"]
        wanted = (lines["plane_id"].map(names) == plane_name).to_numpy(dtype=bool)
        if line_name is not None:
            wanted = wanted & (lines["line_name"] == line_name).to_numpy(dtype=bool)
        chosen = np.flatnonzero(wanted)
        if not len(chosen):
            return self.events.iloc[0:0]
        if np.all(np.diff(chosen) == 1):
            return self.events.iloc[first_rows[chosen[0]]:first_rows[chosen[-1] + 1]]
        rows = np.concatenate([np.arange(first_rows[i], first_rows[i + 1]) for i in chosen])
        return self.events.iloc[rows]

    @property
    def device_planes(self) -> pd.DataFrame:
        return self.planes[self.planes["is_device"]]

    def rebase(self, origin_ns: int) -> None:
        """Express ``start_ps`` relative to ``origin_ns`` (a capture-wide origin across hosts)."""
        if origin_ns != self.time_origin_ns:
            self.events["start_ps"] += (self.time_origin_ns - origin_ns) * 1000
            self.time_origin_ns = origin_ns


def _stat_columns(extra_stats: dict[str, str] | None, stats: dict[str, str] | None) -> dict[str, str]:
    columns = dict(EVENT_STAT_COLUMNS if stats is None else stats)
    for name, kind in (extra_stats or {}).items():
        columns[name] = kind
    for kind in columns.values():
        if kind not in STAT_KINDS:
            raise ValueError(f"stat column kind must be one of {STAT_KINDS}, not {kind!r}")
    return columns


def decode_host(data: bytes, *, hostname: str, source: str, extra_stats: dict[str, str] | None = None,
                stats: dict[str, str] | None = None, metadata_stats: Collection[str] = ()) -> HostProfile:
    """Decode a serialized XSpace; raises ``InputError`` with the reason when it is not usable.

    ``stats`` replaces ``EVENT_STAT_COLUMNS`` as the stats decoded into columns (e.g.
    ``ANALYSIS_STAT_COLUMNS``: a narrower frame costs less memory); ``extra_stats`` adds to them.
    ``metadata_stats`` (``METADATA_STATS``): integer stats left in ``event_metadata`` (read with
    ``HostProfile.stat_at``) when no event carries its own value."""
    from tpudoctor.profile.validate import check_bytes, explain_parse_failure

    check_bytes(data, source)
    raw_space_class = message_class("XSpace", raw=True)
    try:
        space = raw_space_class.FromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
        raise explain_parse_failure(data, source) from exc
    if not any(plane.name for plane in space.planes):  # another protobuf can parse as planes without names
        raise InputError(
            f"{source} is not an XSpace profile: it decodes to no named planes",
            hint="pass a <host>.xplane.pb written by the TensorFlow/JAX profiler",
        )
    columns = _stat_columns(extra_stats, stats)
    file_size_bytes = len(data)
    del data  # parsed: the caller's read of the file need not stay while the events are decoded
    box = {"space": space}  # the decoder drops it once the events are decoded
    decoder = _Decoder(lambda: box["space"].planes, columns, list(space.errors), list(space.warnings),
                       release=box.clear, metadata_stats=metadata_stats)
    del space
    try:
        return decoder.build(hostname=hostname, source=source, file_size_bytes=file_size_bytes)
    except wire.WireError as exc:
        raise InputError(f"{source} is corrupt: {exc}",
                         hint="the file was damaged after it was written; capture again") from exc


# The stats the analyses read (tpudoctor.profile.analysis); ``profile analyze`` decodes only these,
# since every dense stat column costs 9 bytes per event (flow ids, run/replica ids, model_flops... are not read).
ANALYSIS_STAT_COLUMNS: dict[str, str] = {name: EVENT_STAT_COLUMNS[name] for name in (
    "step_num", "group_id", "program_id", "device_offset_ps", "device_duration_ps", "hlo_category", "hlo_op",
    "hlo_module", "tf_op", "source", "flops", "model_flops", "bytes_accessed", "tf_function_call", "tracing_count",
)}
# XLA's static op facts: on the op's metadata, one value per op instead of one per execution
METADATA_STATS = ("flops", "model_flops", "bytes_accessed")
STREAM_MIN_BYTES = 64 << 20  # smaller files are read whole (one parse; every error message has the whole file)


def decode_host_file(path: str, *, hostname: str, source: str, extra_stats: dict[str, str] | None = None,
                     stats: dict[str, str] | None = None, metadata_stats: Collection[str] = ()) -> HostProfile:
    """``decode_host`` for a local file, read plane by plane when it is large: the file's bytes and
    protobuf's parse are held for one plane at a time, not for the whole file."""
    import os

    from tpudoctor.profile.validate import check_bytes

    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        if size < STREAM_MIN_BYTES:
            return decode_host(handle.read(), hostname=hostname, source=source, extra_stats=extra_stats, stats=stats,
                               metadata_stats=metadata_stats)
        check_bytes(handle.read(1 << 20), source)  # format and text-copy checks on the head of the file
        layout = _top_level_layout(handle, size)
    if layout is None:  # not a clean XSpace layout: the whole-file path says exactly what is wrong
        with open(path, "rb") as handle:
            return decode_host(handle.read(), hostname=hostname, source=source, extra_stats=extra_stats, stats=stats,
                               metadata_stats=metadata_stats)
    planes, errors, warnings = layout
    plane_class = message_class("XPlane", raw=True)

    def parsed_planes():
        with open(path, "rb") as handle:
            for offset, length in planes:
                header_spans, line_spans = _plane_layout(handle, offset, length)
                try:
                    header = plane_class.FromString(_read_spans(handle, header_spans))
                except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError
                    raise InputError(f"{source} is a corrupt XSpace profile: the plane at byte {offset:,} "
                                     "does not decode", hint="the file was damaged after it was written; copy it "
                                     "again as binary or recapture") from exc
                yield _PlaneOnDisk(header, _LinesOnDisk(path, line_spans))

    decoder = _Decoder(parsed_planes, _stat_columns(extra_stats, stats), errors, warnings,
                       metadata_stats=metadata_stats)
    try:
        profile = decoder.build(hostname=hostname, source=source, file_size_bytes=size)
    except wire.WireError as exc:
        raise InputError(f"{source} is corrupt: {exc}",
                         hint="the file was damaged after it was written; capture again") from exc
    if not profile.planes["plane_name"].astype(bool).any():
        raise InputError(f"{source} is not an XSpace profile: it decodes to no named planes",
                         hint="pass a <host>.xplane.pb written by the TensorFlow/JAX profiler")
    return profile


class _LinesOnDisk:
    """A plane's lines as bytes, each read from the file when iterated: a big plane is never held whole."""

    def __init__(self, path: str, spans: list[tuple[int, int]]):
        self.path, self.spans = path, spans

    def __len__(self) -> int:
        return len(self.spans)

    def __iter__(self):
        with open(self.path, "rb") as handle:
            for offset, length in self.spans:
                handle.seek(offset)
                yield handle.read(length)


class _PlaneOnDisk:
    """An XPlane's header (parsed: ids, names, metadata, stats) with its lines left in the file."""

    def __init__(self, header, lines: _LinesOnDisk):
        self.id, self.name, self.stats = header.id, header.name, header.stats
        self.event_metadata, self.stat_metadata = header.event_metadata, header.stat_metadata
        self.lines = lines


_PLANE_LINES = 3  # XPlane.lines


def _plane_layout(handle, offset: int, length: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(spans of the plane's fields other than its lines, spans of its lines' payloads) in the file,
    adjacent header fields merged into one span; ``WireError`` where the fields do not add up."""
    header: list[tuple[int, int]] = []
    lines: list[tuple[int, int]] = []
    position, end = offset, offset + length
    while position < end:
        handle.seek(position)
        head = handle.read(20)
        tag, used = wire.read_varint(head, 0)
        if tag is None or tag >> 3 == 0:
            raise wire.WireError(f"the plane at byte {offset:,} has a malformed field")
        value = 0
        if tag & 7 in (wire.WIRE_VARINT, wire.WIRE_LEN):
            value, used = wire.read_varint(head, used)
        if value is None or tag & 7 not in (wire.WIRE_VARINT, wire.WIRE_LEN, wire.WIRE_FIXED64, wire.WIRE_FIXED32):
            raise wire.WireError(f"the plane at byte {offset:,} has a malformed field")
        payload_start = position + used
        if tag & 7 == wire.WIRE_LEN:
            field_end = payload_start + value
        else:
            field_end = payload_start + {wire.WIRE_VARINT: 0, wire.WIRE_FIXED64: 8, wire.WIRE_FIXED32: 4}[tag & 7]
        if field_end > end:
            raise wire.WireError(f"a field of the plane at byte {offset:,} runs past the plane")
        if tag == (_PLANE_LINES << 3 | wire.WIRE_LEN):
            lines.append((payload_start, field_end - payload_start))
        elif header and header[-1][0] + header[-1][1] == position:
            header[-1] = (header[-1][0], field_end - header[-1][0])
        else:
            header.append((position, field_end - position))
        position = field_end
    return header, lines


def _read_spans(handle, spans: list[tuple[int, int]]) -> bytes:
    parts = []
    for start, length in spans:
        handle.seek(start)
        parts.append(handle.read(length))
    return b"".join(parts)


def _top_level_layout(handle, size: int):
    """(plane byte ranges, errors, warnings) of an XSpace file, from its top-level fields (all
    length-delimited: 1 planes, 2 errors, 3 warnings, 4 hostnames); None when the layout is not that."""
    planes, errors, warnings = [], [], []
    position = 0
    handle.seek(0)
    while position < size:
        head = handle.read(20)
        tag, used = wire.read_varint(head, 0)
        length, used = wire.read_varint(head, used) if tag is not None else (None, used)
        if tag is None or length is None or tag & 7 != 2 or tag >> 3 not in (1, 2, 3, 4):
            return None
        start = position + used
        if start + length > size:
            return None
        if tag >> 3 == 1:
            planes.append((start, length))
        elif tag >> 3 in (2, 3):
            handle.seek(start)
            (errors if tag >> 3 == 2 else warnings).append(handle.read(length).decode("utf-8", errors="replace"))
        position = start + length
        handle.seek(position)
    return (planes, errors, warnings) if planes else None


class _Decoder:
    """``planes()`` gives the planes (ids, names, metadata, stats; ``lines`` as each line's bytes);
    it is called twice (headers, then events) and each line is parsed when it is reached, so a file
    read plane by plane (``_PlaneOnDisk``) holds one parsed line at a time."""

    def __init__(self, planes, columns: dict[str, str], errors: list[str], warnings: list[str], release=None,
                 metadata_stats: Collection[str] = ()):
        self.planes = planes
        self.release = release
        self.metadata_stats = frozenset(metadata_stats)
        self.columns = columns
        self.errors, self.warnings = errors, warnings

    def build(self, *, hostname: str, source: str, file_size_bytes: int) -> HostProfile:
        plane_rows, line_rows, meta_rows = [], [], []
        plane_stats: dict[int, dict[str, object]] = {}
        stat_names: list[list[str]] = []  # per plane: stat metadata names, aligned with stat_ids
        stat_ids: list[np.ndarray] = []
        meta_ids: list[np.ndarray] = []
        meta_offset: list[int] = []
        for plane_index, plane in enumerate(self.planes()):
            names_by_id = {key: value.name for key, value in plane.stat_metadata.items()}
            ids = np.asarray(sorted(names_by_id), dtype=np.int64)
            stat_ids.append(ids)
            stat_names.append([names_by_id[int(key)] for key in ids])
            plane_stats[plane_index] = {
                names_by_id.get(stat.metadata_id, f"#{stat.metadata_id}"): _stat_value(stat, names_by_id)
                for stat in plane.stats
            }
            meta_keys = sorted(plane.event_metadata.keys())
            meta_offset.append(len(meta_rows))
            meta_ids.append(np.asarray(meta_keys, dtype=np.int64))
            for key in meta_keys:
                metadata = plane.event_metadata[key]
                stats = {names_by_id.get(stat.metadata_id, f"#{stat.metadata_id}"): _stat_value(stat, names_by_id)
                         for stat in metadata.stats}
                meta_rows.append((plane_index, int(key), metadata.name, metadata.display_name, stats))
            n_plane_events = 0
            for line_bytes in plane.lines:
                line = _parse_line(line_bytes, plane_index)
                events = line.events
                n_plane_events += len(events)
                line_rows.append((plane_index, line.id, line.name, line.display_name, line.timestamp_ns,
                                  line.duration_ps, len(events)))
            name = plane.name
            plane_rows.append({
                "plane_id": plane_index,
                "xplane_id": plane.id,
                "plane_name": name,
                "device_kind": _device_kind(name, plane_stats[plane_index]),
                "is_device": name.startswith(DEVICE_PLANE_PREFIXES),
                "n_lines": len(plane.lines),
                "n_events": n_plane_events,
                "n_event_metadata": len(plane.event_metadata),
            })

        plane = line = events = None  # the last plane's parse is not kept while the events are decoded
        release_freed_heap()
        line_counts = np.asarray([row[6] for row in line_rows], dtype=np.int64)
        line_ts = np.asarray([row[4] for row in line_rows], dtype=np.int64)
        line_plane = np.asarray([row[0] for row in line_rows], dtype=np.int32)
        with_events = line_counts > 0
        origin_ns = int(line_ts[with_events].min()) if with_events.any() else 0
        n_events = int(line_counts.sum())
        event_line = np.repeat(np.arange(len(line_counts), dtype=np.int32), line_counts)
        event_plane = line_plane[event_line]

        metadata_id = np.zeros(n_events, dtype=np.int64)
        offset_ps = np.zeros(n_events, dtype=np.int64)
        duration_ps = np.zeros(n_events, dtype=np.int64)
        sinks = {column: _ColumnSink(kind, n_events) for column, kind in self.columns.items()}
        column_number = {name: index for index, name in enumerate(self.columns)}
        # per plane: stat metadata row -> event column number (-1: not a column)
        stat_column_table = np.asarray([column_number.get(name, -1) for names in stat_names for name in names],
                                       dtype=np.int16)  # int16: a radix sort below
        stat_offsets = list(np.cumsum([0] + [len(ids) for ids in stat_ids])[:-1])

        stat_rows = _RowLookup(stat_ids, stat_offsets)
        # lazily, line by line: one line's parse at a time
        line_events = (_parse_line(line_bytes, plane_index).events
                       for plane_index, plane in enumerate(self.planes()) for line_bytes in plane.lines)
        for first_event, holder in _batches(line_events, line_counts):
            chunks = holder.pop()  # the generator keeps only the emptied holder: the bytes go with `del`
            lengths = np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks))
            chunks.append(_PADDING)
            buffer = wire.Buffer(b"".join(chunks), padded=True)
            del chunks
            ends = np.cumsum(lengths)
            starts = ends - lengths
            batch = slice(first_event, first_event + len(starts))
            stat_event, stat_start, stat_end = _event_fields(
                buffer, starts, ends, (metadata_id[batch], offset_ps[batch], duration_ps[batch]))
            stats = _decode_stats(buffer, stat_event + first_event, stat_start, stat_end)
            del stat_event, stat_start, stat_end
            stat_plane = event_plane[stats["event"]]
            stat_row = stat_rows.lookup(stat_plane, stats["metadata_id"])
            stat_column = _gather(stat_column_table, stat_row)
            order = np.argsort(stat_column, kind="stable")
            bounds = np.searchsorted(stat_column[order], np.arange(len(sinks) + 1))
            strings = _StringResolver(buffer, stats, stat_plane, stat_ids, stat_names)
            for index, sink in enumerate(sinks.values()):
                rows = order[bounds[index]:bounds[index + 1]]
                if len(rows):
                    targets = stats["event"][rows]
                    if sink.kind == "str":
                        sink.put(targets, strings.values(rows))
                    else:
                        sink.put(targets, *_stat_numbers(stats, rows))
            del buffer, stats, strings

        errors, warnings = self.errors, self.warnings
        del line_events
        if self.release is not None:
            self.release()
        self.planes = None  # the parsed message is no longer needed: free it before the tables are built
        release_freed_heap()

        # metadata row of every event (-1: id not in its plane's table)
        meta_row = _RowLookup(meta_ids, meta_offset).lookup(event_plane, metadata_id)
        metadata_id = _narrowed(metadata_id)
        event_metadata = _metadata_frame(meta_rows, self.columns)
        # each per-event temporary is dropped as soon as its last column is built, and each stat
        # column takes its final form before the next is filled: the peak is the frame itself
        stat_arrays: dict[str, Any] = {}
        masks = _SharedMasks()
        from_metadata = set()
        for column, sink in sinks.items():
            if (column in self.metadata_stats and sink.values is None and sink.kind in ("int", "uint")
                    and column in event_metadata.columns):
                from_metadata.add(column)  # no event carries its own: read from the metadata when asked
                continue
            if column in event_metadata.columns:
                sink.fill_from_metadata(event_metadata[column], meta_row)
            if sink.values is not None or column in CORE_STAT_COLUMNS:
                stat_arrays[column] = sink.array(masks)
            sink.release()
        del masks
        name = _categorical(event_metadata["name"].tolist(), meta_row)
        del meta_row
        start_ps = offset_ps
        first_row = 0
        for count, timestamp_ns in zip(line_counts.tolist(), line_ts.tolist(), strict=True):
            start_ps[first_row:first_row + count] += (timestamp_ns - origin_ns) * 1000  # in place, line by line
            first_row += count
        line_id = _narrowed(np.asarray([row[1] for row in line_rows], dtype=np.int64))[event_line]
        line_name = _categorical([row[2] for row in line_rows], event_line)
        del event_line
        plane_name = _categorical([row["plane_name"] for row in plane_rows], event_plane)
        if len(plane_rows) <= np.iinfo(np.int16).max:
            event_plane = event_plane.astype(np.int16)
        frame: dict[str, Any] = {
            "plane_id": event_plane,
            "line_id": line_id,
            "plane_name": plane_name,
            "line_name": line_name,
            "metadata_id": metadata_id,
            "name": name,
            "start_ps": start_ps,
            "duration_ps": duration_ps,
            **stat_arrays,
        }
        del stat_arrays
        for column in CORE_STAT_COLUMNS:  # there, all-missing, when asked for and the capture has none
            if column not in frame and column in self.columns and column not in from_metadata:
                frame[column] = _ColumnSink(EVENT_STAT_COLUMNS[column], n_events).array()
        events = pd.DataFrame(frame, copy=False)
        lines = pd.DataFrame(line_rows, columns=["plane_id", "line_id", "line_name", "display_name",
                                                 "timestamp_ns", "duration_ps", "n_events"])
        planes = pd.DataFrame(plane_rows, columns=["plane_id", "xplane_id", "plane_name", "device_kind",
                                                   "is_device", "n_lines", "n_events", "n_event_metadata"])
        return HostProfile(
            hostname=hostname, source=source, planes=planes, lines=lines, events=events,
            event_metadata=event_metadata, plane_stats=plane_stats, time_origin_ns=origin_ns,
            file_size_bytes=file_size_bytes, errors=errors, warnings=warnings, metadata_stats=frozenset(from_metadata),
        )


_PADDING = bytes(wire.PAD_BYTES)
BATCH_EVENTS = 1 << 17  # events decoded together: bounds the temporary arrays, keeps numpy calls large


def _batches(line_events: list[Any], line_counts: np.ndarray):
    """Yield (index of the first event, [list of event bytes]) for runs of about BATCH_EVENTS events."""
    first = 0
    chunks: list[bytes] = []
    for events, count in zip(line_events, line_counts.tolist(), strict=True):
        low = 0
        while low < count:
            high = min(count, low + BATCH_EVENTS - len(chunks))
            chunks.extend(events[low:high] if (low, high) != (0, count) else events)
            low = high
            if len(chunks) >= BATCH_EVENTS:
                holder, chunks = [chunks], []
                yield first, holder
                first += BATCH_EVENTS
    if chunks:
        holder, chunks = [chunks], []
        yield first, holder


class _ColumnSink:
    """One stat column filled batch by batch; never-filled columns cost no memory (read-only NA views)."""

    def __init__(self, kind: str, n_events: int):
        self.kind = kind
        self.n_events = n_events
        self.values: np.ndarray | None = None
        self.present: np.ndarray | None = None
        self.categories: dict[str, int] = {}

    def _allocate(self) -> None:
        if self.values is not None:
            return
        if self.kind == "str":  # category code + 1, so that 0 (calloc'd, never touched) is "no value"
            self.values = np.zeros(self.n_events, dtype=np.int32)
        elif self.kind == "float":
            self.values = np.full(self.n_events, np.nan)
        else:
            self.values = np.zeros(self.n_events, dtype=np.uint64 if self.kind == "uint" else np.int64)
            self.present = np.zeros(self.n_events, dtype=bool)

    def _codes(self, values: list[object]) -> np.ndarray:
        index = self.categories
        return np.fromiter((-1 if v is None else index.setdefault(_text(v), len(index)) for v in values),
                           dtype=np.int32, count=len(values))

    def put(self, targets: np.ndarray, values: Any, kinds: np.ndarray | None = None) -> None:
        """Store values: a list of texts (str columns) or raw 64-bit values with their XStat kinds."""
        self._allocate()
        if self.kind == "str":
            codes = self._codes(values)
            codes += 1
            self.values[targets] = codes
            return
        doubles = kinds == _DOUBLE
        signed = kinds == _INT64
        unsigned = kinds == _UINT64
        as_float = values.view(np.float64)
        if self.kind == "float":
            out = np.full(len(values), np.nan)
            out[doubles] = as_float[doubles]
            out[signed] = values[signed].view(np.int64)
            out[unsigned] = values[unsigned]
            self.values[targets] = out
            return
        # integers keep their 64 bits exactly; a double is truncated when it fits, else missing
        dtype = self.values.dtype
        limits = np.iinfo(dtype)
        with np.errstate(invalid="ignore"):
            double_fits = doubles & np.isfinite(as_float) & (as_float >= float(limits.min)) & (as_float < float(limits.max))
        out = values.view(dtype).copy()
        out[double_fits] = as_float[double_fits].astype(dtype)
        self.values[targets] = out
        self.present[targets] = signed | unsigned | double_fits

    def fill_from_metadata(self, meta_series: pd.Series, meta_row: np.ndarray) -> None:
        """Where an event has no own value, take its metadata's."""
        if self.kind == "str":
            meta_values = [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v
                           for v in meta_series.tolist()]
            valid = np.asarray([v is not None for v in meta_values], dtype=bool)
        else:
            dtype = np.float64 if self.kind == "float" else np.uint64 if self.kind == "uint" else np.int64
            numbers, valid = _numbers_of(meta_series, dtype)
        if not valid.any():
            return
        # metadata rows with a value, as a lookup that row -1 (no metadata) also indexes
        valid_row = np.append(valid, False)
        meta_codes = None
        for low in range(0, len(meta_row), BATCH_EVENTS * 8):  # bounded temporaries on big captures
            chunk_rows = meta_row[low:low + BATCH_EVENTS * 8]
            candidates = np.flatnonzero(valid_row[chunk_rows])
            if not len(candidates):
                continue
            self._allocate()
            rows = chunk_rows[candidates]
            candidates += low
            if self.kind == "str":
                if meta_codes is None:  # categories in the same order as before: only once an event takes one
                    meta_codes = self._codes(meta_values) + 1
                free = self.values[candidates] == 0
                self.values[candidates[free]] = meta_codes[rows[free]]
            elif self.kind == "float":
                free = np.isnan(self.values[candidates])
                self.values[candidates[free]] = numbers[rows[free]]
            else:
                free = ~self.present[candidates]
                self.values[candidates[free]] = numbers[rows[free]]
                self.present[candidates[free]] = True

    def release(self) -> None:
        self.values = self.present = None

    def array(self, masks: _SharedMasks | None = None):
        n = self.n_events
        if self.kind == "str":
            categories = pd.Index(list(self.categories), dtype=object)
            if self.values is None:
                return pd.Categorical.from_codes(np.broadcast_to(np.int8(-1), (n,)), categories=categories)
            codes = np.subtract(self.values, 1, dtype=_code_dtype(len(categories)), casting="unsafe")
            return pd.Categorical.from_codes(codes, categories=categories, validate=False)
        if self.kind == "float":
            return self.values if self.values is not None else np.broadcast_to(np.float64(np.nan), (n,))
        if self.values is None:
            dtype = np.uint64 if self.kind == "uint" else np.int64
            return pd.arrays.IntegerArray(np.broadcast_to(dtype(0), (n,)), np.broadcast_to(np.True_, (n,)))
        missing = ~self.present
        return pd.arrays.IntegerArray(self.values, masks.shared(missing) if masks is not None else missing)


class _SharedMasks:
    """Integer stat columns whose missing-value masks are equal share one (read-only) mask: the
    stats of an op's metadata (program_id, flops, bytes_accessed...) are present on the same events."""

    def __init__(self):
        self.masks: list[np.ndarray] = []

    def shared(self, mask: np.ndarray) -> np.ndarray:
        for known in self.masks:
            if np.array_equal(known, mask):
                return known
        mask.flags.writeable = False
        self.masks.append(mask)
        return mask


def _metadata_row_lookup(event_metadata: pd.DataFrame) -> _RowLookup:
    """The row lookup of ``event_metadata`` (rows by plane, ids sorted within a plane, as decoded)."""
    plane = event_metadata["plane_id"].to_numpy(np.int64)
    ids = event_metadata["metadata_id"].to_numpy(np.int64)
    n_planes = int(plane.max()) + 1 if len(plane) else 0
    bounds = np.searchsorted(plane, np.arange(n_planes + 1))
    return _RowLookup([ids[bounds[p]:bounds[p + 1]] for p in range(n_planes)], bounds[:-1].tolist())


def _numbers_of(values: pd.Series, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """(numbers, valid) of a metadata stat column: each value as ``dtype`` (``_to_number``)."""
    converted = [_to_number(v, dtype) for v in values.tolist()]
    valid = np.asarray([v is not None for v in converted], dtype=bool)
    numbers = np.zeros(len(converted), dtype=dtype)
    if valid.any():
        numbers[valid] = [v for v in converted if v is not None]
    return numbers, valid


def _metadata_numbers(values: pd.Series, kind: str) -> pd.arrays.IntegerArray:
    """A metadata stat column as a nullable integer array, converted as an event column's is."""
    numbers, valid = _numbers_of(values, np.uint64 if kind == "uint" else np.int64)
    return pd.arrays.IntegerArray(numbers, ~valid)


def _parse_line(data: bytes, plane_index: int):
    """An XLine (events as bytes) from its bytes; ``WireError`` when they do not decode."""
    try:
        return message_class("XLine", raw=True).FromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
        raise wire.WireError(f"a line of plane {plane_index} does not decode") from exc


def release_freed_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc ``malloc_trim``): protobuf's parse
    frees many small blocks that would otherwise stay in this process while the tables are built."""
    import ctypes
    import ctypes.util

    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        pass


def _code_dtype(n_categories: int) -> type:
    """The code dtype pandas itself picks for this many categories (so from_codes keeps the array)."""
    if n_categories < 1 << 7:
        return np.int8
    if n_categories < 1 << 15:
        return np.int16
    return np.int32 if n_categories < 1 << 31 else np.int64


def _narrowed(values: np.ndarray) -> np.ndarray:
    """int64 ids as int32 where every one fits (ids are small counters), else as uint32 where
    they fit that (the device planes' derived lines are numbered from 0xdeadbeef)."""
    if not len(values):
        return values.astype(np.int32)
    low, high = int(values.min()), int(values.max())
    for dtype in (np.int32, np.uint32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype)
    return values


def _categorical(labels: list[object], rows: np.ndarray) -> pd.Categorical:
    """A categorical of ``labels[rows]`` (row -1: missing) built from codes of the distinct labels."""
    codes, categories = _codes_of(labels)
    table = np.append(codes, -1).astype(_code_dtype(len(categories)))  # row -1 reads the appended -1
    return pd.Categorical.from_codes(table[rows], categories=categories, validate=False)


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _gather(table: np.ndarray, rows: np.ndarray, missing: int = -1) -> np.ndarray:
    """``table[rows]`` in the table's dtype, ``missing`` where a row is -1 (the only negative row): the
    table gets ``missing`` as its last entry, which row -1 indexes, so no temporary as long as ``rows``."""
    extended = np.append(table, np.asarray(missing, dtype=table.dtype))
    return extended[rows]


def _codes_of(values: list[object]) -> tuple[np.ndarray, pd.Index]:
    """Category codes (-1 for None) and categories of a short list of strings."""
    index: dict[object, int] = {}
    codes = np.fromiter((-1 if v is None else index.setdefault(v, len(index)) for v in values),
                        dtype=np.int32, count=len(values))
    return codes, pd.Index(list(index), dtype=object)


class _RowLookup:
    """Row of each (plane, id) in per-plane sorted id tables laid end to end (-1 when absent).

    Metadata ids are mostly small counters, so the rows of those planes fit a dense (plane x id)
    table read with one gather; planes with other ids (``/host:metadata`` has hashes) are
    binary-searched (``_lookup_rows``)."""

    DENSE_MAX_CELLS = 1 << 24  # 64 MB of int32 at most
    CHUNK = 1 << 20  # items per gather: bounds the int64 index temporaries on big captures

    def __init__(self, ids_per_plane: list[np.ndarray], offsets: list[int]):
        self.ids_per_plane, self.offsets = ids_per_plane, offsets
        n_planes = len(ids_per_plane)
        self.dense = np.asarray([not len(ids) or (ids[0] >= 0 and ids[-1] < self.DENSE_MAX_CELLS // max(n_planes, 1))
                                 for ids in ids_per_plane], dtype=bool)
        self.width = max([int(ids[-1]) + 1 for ids, dense in zip(ids_per_plane, self.dense, strict=True)
                          if dense and len(ids)], default=1)
        table = np.full((n_planes, self.width), -1, dtype=np.int32)
        for plane_index in np.flatnonzero(self.dense):
            ids, offset = ids_per_plane[plane_index], offsets[plane_index]
            table[plane_index, ids] = np.arange(offset, offset + len(ids), dtype=np.int32)
        self.table = np.append(table.ravel(), np.int32(-1))  # the last cell answers ids out of range

    def lookup(self, plane_of_item: np.ndarray, ids_of_item: np.ndarray) -> np.ndarray:
        rows = np.empty(len(ids_of_item), dtype=np.int32)
        missing = len(self.table) - 1
        for low in range(0, len(ids_of_item), self.CHUNK):
            ids = ids_of_item[low:low + self.CHUNK]
            cell = plane_of_item[low:low + self.CHUNK].astype(np.int64)
            cell *= self.width
            cell += ids
            cell[(ids < 0) | (ids >= self.width)] = missing
            rows[low:low + self.CHUNK] = self.table[cell]
        if not self.dense.all():
            searched = np.flatnonzero(~self.dense[plane_of_item])
            if len(searched):
                rows[searched] = _lookup_rows(plane_of_item[searched], ids_of_item[searched], self.ids_per_plane,
                                              self.offsets)
        return rows


def _lookup_rows(plane_of_item: np.ndarray, ids_of_item: np.ndarray, ids_per_plane: list[np.ndarray],
                 offsets: list[int]) -> np.ndarray:
    """Row (int32) of each (plane, id) in per-plane sorted id tables laid end to end; -1 when absent.

    Items are grouped by plane once (events already are: a plane's lines are adjacent), so each
    plane's ids are looked up in one slice instead of a scan of all items per plane."""
    rows = np.full(len(ids_of_item), -1, dtype=np.int32)
    if not len(ids_of_item):
        return rows
    order = None
    if np.any(plane_of_item[1:] < plane_of_item[:-1]):
        order = np.argsort(plane_of_item, kind="stable")
        plane_of_item = plane_of_item[order]
    bounds = np.searchsorted(plane_of_item, np.arange(len(ids_per_plane) + 1))
    for plane_index, ids in enumerate(ids_per_plane):
        low, high = int(bounds[plane_index]), int(bounds[plane_index + 1])
        if not len(ids) or low == high:
            continue
        selected = slice(low, high) if order is None else order[low:high]
        wanted = ids_of_item[selected]
        position = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
        found = ids[position] == wanted
        position += offsets[plane_index]
        position[~found] = -1
        rows[selected] = position
    return rows


class _StringResolver:
    """String values of stat rows: str values decoded once per distinct value, refs resolved to names."""

    def __init__(self, buffer, stats, stat_plane, stat_ids, stat_names):
        self.buffer, self.stats, self.stat_plane = buffer, stats, stat_plane
        self.stat_ids, self.stat_names = stat_ids, stat_names
        self._data: bytes | None = None

    def values(self, rows: np.ndarray) -> list[object]:
        if self._data is None:
            self._data = self.buffer.data()
        data = self._data
        stats = self.stats
        cache: dict[bytes, str] = {}
        out: list[object] = []
        for kind, raw, start, length, plane in zip(
            stats["kind"][rows].tolist(), stats["raw"][rows].tolist(), stats["text_start"][rows].tolist(),
            stats["text_length"][rows].tolist(), self.stat_plane[rows].tolist(), strict=False,
        ):
            if kind == _STR or kind == _BYTES:
                chunk = data[start:start + length]
                text = cache.get(chunk)
                if text is None:
                    text = cache[chunk] = chunk.decode("utf-8", errors="replace")
                out.append(text)
            elif kind == _REF:
                ids = self.stat_ids[plane]
                position = int(np.searchsorted(ids, raw))
                out.append(self.stat_names[plane][position] if position < len(ids) and ids[position] == raw else None)
            elif kind == _DOUBLE:
                out.append(repr(np.uint64(raw).view(np.float64).item()))
            elif kind == _INT64:
                out.append(str(np.uint64(raw).view(np.int64).item()))
            else:
                out.append(str(raw))
        return out


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value if isinstance(value, str) else str(value)


def _to_number(value: object, dtype: type) -> int | float | None:
    """A metadata stat value as a number of ``dtype`` (64-bit integers keep their bits); None if not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    if dtype == np.float64:
        return float(value)
    if isinstance(value, (float, np.floating)):
        limits = np.iinfo(dtype)
        return int(value) if np.isfinite(value) and limits.min <= value < float(limits.max) else None
    number = int(value)
    if dtype == np.uint64:
        return number & 0xFFFFFFFFFFFFFFFF
    return number - (1 << 64) if number >= 1 << 63 else number


# Tag bytes of fields as protobuf writes them (field number << 3 | wire type)
_TAG_METADATA_ID, _TAG_OFFSET_PS, _TAG_DURATION_PS, _TAG_STAT = 0x08, 0x10, 0x18, 0x22
_VALUE_TAGS = {0x11: _DOUBLE, 0x18: _UINT64, 0x20: _INT64, 0x2A: _STR, 0x32: _BYTES, 0x38: _REF}


def _event_fields(buffer: wire.Buffer, starts: np.ndarray, ends: np.ndarray, columns: tuple[np.ndarray, ...]):
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


def _decode_stats(buffer: wire.Buffer, event: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> dict[str, np.ndarray]:
    """Decode XStat messages at the given spans into parallel arrays: metadata_id (field 1), then
    the one value field; stats laid out otherwise go through the generic field walk."""
    n = len(event)
    metadata_id = np.zeros(n, dtype=np.int64)
    kind = np.zeros(n, dtype=np.int8)
    raw = np.zeros(n, dtype=np.uint64)  # varint value or the fixed64 bits of a double
    text_start = np.zeros(n, dtype=np.int64)
    text_length = np.zeros(n, dtype=np.int64)
    data = buffer.bytes
    pos = starts.astype(np.int64, copy=True)
    hit = np.flatnonzero((data[pos] == _TAG_METADATA_ID) & (pos < ends))
    if len(hit):
        values, lengths = wire.read_varints(buffer, pos[hit] + 1)
        metadata_id[hit] = values.view(np.int64)
        pos[hit] += lengths + 1
    tag = np.where(pos < ends, data[pos], 0)
    value_pos = pos + 1
    varint = np.flatnonzero((tag == 0x18) | (tag == 0x20) | (tag == 0x38))
    values, lengths = wire.read_varints(buffer, value_pos[varint])
    kind[varint] = tag[varint] >> 3
    raw[varint] = values
    pos[varint] = value_pos[varint] + lengths
    double = np.flatnonzero(tag == 0x11)
    if len(double):
        kind[double] = _DOUBLE
        raw[double] = wire.read_fixed64(buffer, value_pos[double])
        pos[double] = value_pos[double] + 8
    text = np.flatnonzero((tag == 0x2A) | (tag == 0x32))
    if len(text):
        lengths, length_bytes = wire.read_varints(buffer, value_pos[text])
        kind[text] = tag[text] >> 3
        text_start[text] = value_pos[text] + length_bytes
        text_length[text] = lengths.astype(np.int64)
        pos[text] = text_start[text] + text_length[text]
    irregular = np.flatnonzero(pos != ends)  # another field order, unknown fields, or a value that overruns
    if len(irregular):
        metadata_id[irregular] = kind[irregular] = raw[irregular] = text_start[irregular] = text_length[irregular] = 0
        for alive, field, wire_type, value_pos, value, length in wire.scan_fields(buffer, starts[irregular], ends[irregular]):
            rows = irregular[alive]
            hit = (field == 1) & (wire_type == wire.WIRE_VARINT)
            metadata_id[rows[hit]] = value[hit].view(np.int64)
            for number in (_UINT64, _INT64, _REF):
                hit = (field == number) & (wire_type == wire.WIRE_VARINT)
                kind[rows[hit]] = number
                raw[rows[hit]] = value[hit]
            hit = (field == _DOUBLE) & (wire_type == wire.WIRE_FIXED64)
            if hit.any():
                kind[rows[hit]] = _DOUBLE
                raw[rows[hit]] = wire.read_fixed64(buffer, value_pos[hit])
            for number in (_STR, _BYTES):
                hit = (field == number) & (wire_type == wire.WIRE_LEN)
                kind[rows[hit]] = number
                text_start[rows[hit]] = value_pos[hit]
                text_length[rows[hit]] = length[hit]
    return {"event": event, "metadata_id": metadata_id, "kind": kind, "raw": raw,
            "text_start": text_start, "text_length": text_length}


def _stat_numbers(stats: dict[str, np.ndarray], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(raw 64 bits, value kind) of the given stat rows; ``_ColumnSink.put`` converts by kind."""
    return stats["raw"][rows], stats["kind"][rows]


def _stat_value(stat: Any, names_by_id: dict[int, str]) -> object:
    which = stat.WhichOneof("value")
    if which == "ref_value":
        return names_by_id.get(stat.ref_value)
    if which == "bytes_value":
        value = stat.bytes_value
        return value if len(value) <= BIG_BYTES_STAT else f"<{len(value)} bytes>"
    if which is None:
        return None
    return getattr(stat, which)


def _metadata_frame(rows: list[tuple], columns: dict[str, str]) -> pd.DataFrame:
    base = pd.DataFrame([row[:4] for row in rows], columns=["plane_id", "metadata_id", "name", "display_name"])
    stat_records = [row[4] for row in rows]
    stat_names = sorted({name for record in stat_records for name in record})
    for name in stat_names:
        values = [record.get(name) for record in stat_records]
        kind = columns.get(name)
        if kind == "str":
            base[name] = pd.Series([None if v is None else _text(v) for v in values], dtype=object)
        else:
            base[name] = pd.Series(values, dtype=object)
    return base


def _device_kind(plane_name: str, stats: dict[str, object]) -> str | None:
    """'TPU v6 Lite' (the plane's device_type_string), else a kind from the plane name."""
    described = stats.get("device_type_string")
    if isinstance(described, str) and described:
        return described
    if plane_name.startswith("/device:TPU:"):
        return "TPU"
    if plane_name.startswith("/device:GPU:"):
        vendor = stats.get("device_vendor")
        if isinstance(vendor, str) and vendor:
            return f"GPU ({vendor})"
        major, minor = stats.get("compute_cap_major"), stats.get("compute_cap_minor")
        return f"GPU (compute capability {major}.{minor})" if major is not None else "GPU"
    if plane_name == "/host:CPU":
        return "CPU"
    return None
