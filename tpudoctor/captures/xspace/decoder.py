"""Wire-level decoding of an XSpace: plane and line headers, event metadata, and every event's
fields and stats, batch by batch (an event's own fields by ``event_wire``). What the stats mean and the tables
they fill are ``tables``'s job.

How (measured in ``benchmarks/bench_profile_load.py`` and ``bench_profile_phases.py``; see the
module docstring of ``tpudoctor.profile``): protobuf's C parser (upb) reads the file against a
schema in which ``XPlane.lines`` and ``XLine.events`` are ``repeated bytes``, so it finds every
line's and event's bytes without building a message per event; the events of about 128 k at a
time are joined into one buffer and their fields and stats decoded together with numpy
(``tpudoctor.captures.wire``), each field read where protobuf writes it. Plane/line headers and the
metadata tables (thousands of entries, not millions) are read as ordinary messages.

With ``jit`` (``compiled.Kernels``), each line's bytes are walked once by compiled code instead
(``jit_wire``): the same fields and stats, 5-10x quicker than the numpy rounds on large captures; it also
gives each event's metadata row, and (decoding serially) keeps the events' metadata ids in int16 until one
does not fit. What it costs is mostly the first touch of the columns it writes, not the decoding:
on the 1 GB capture (36 M events, 2026-12-05) its own work is ~0.65 s, zeroing the ~0.8 GB it writes 1-2 s of
sys time on a VM (``benchmarks/capture_memory.py``).

The planes come from a callable called twice (headers, then events), each line parsed when it is
reached, so that a file read plane by plane (``planes_on_disk``) holds one parsed line at a time.

From ``PARALLEL_MIN_EVENTS`` events, on three cores or more, the compiled kernel runs on a thread per
core but one (at most ``MAX_DECODE_THREADS``; ctypes lets the GIL go while it runs): this thread reads
the lines and fills the columns while the threads decode the next batches of whole lines, each into rows
of its own (a line's first row is known from the headers). Batches are yielded in file order, so the
tables are the serial decode's; one batch more than the threads is alive at a time. On the 1 GB capture
the kernel was about 3 s of the events' 3.5-3.9 s (before its varint loop was rewritten) and this thread's
share about 1.1-1.5 s (reading the lines, the columns). The second read of the lines (headers, then events)
costs about 0.1 s on 1 GB: not worth holding them.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

import numpy as np

from tpudoctor.captures import wire
from tpudoctor.captures.schema import message_class
from tpudoctor.captures.xspace.event_wire import event_fields
from tpudoctor.captures.xspace.lookup import RowLookup, code_dtype, gather, run_of_rows

BIG_BYTES_STAT = 4096  # plane/metadata stats with longer bytes values (HloProtos) keep only their size
BATCH_EVENTS = 1 << 17  # events decoded together: bounds the temporary arrays, keeps numpy calls large

# XStat value fields (their field numbers): the kind of each decoded stat value
DOUBLE, UINT64, INT64, STR, BYTES, REF = 2, 3, 4, 5, 6, 7


@dataclasses.dataclass
class PlaneHeader:
    """An XPlane without its events: ``stats`` by name (bytes values over ``BIG_BYTES_STAT`` as "<N bytes>")."""

    xplane_id: int
    name: str
    stats: dict[str, object]
    n_lines: int
    n_events: int
    n_event_metadata: int


LINE_FIELDS = ("plane_id", "line_id", "line_name", "display_name", "timestamp_ns", "duration_ps", "n_events")


@dataclasses.dataclass
class SpaceHeaders:
    """Everything of an XSpace but its events' fields and stats (thousands of rows, not millions),
    and where each event belongs. ``plane_id`` is a plane's position in the file."""

    planes: list[PlaneHeader]
    lines: list[tuple]
    """One ``LINE_FIELDS`` tuple per line, in file order."""
    metadata: list[tuple]
    """Event metadata: (plane_id, metadata_id, name, display_name, {stat name: value}), by plane, ids sorted."""
    metadata_ids: list[np.ndarray]
    """Per plane: its event metadata ids, sorted (the rows of ``metadata`` from ``metadata_offsets``)."""
    metadata_offsets: list[int]
    stat_ids: list[np.ndarray]
    """Per plane: its stat metadata ids, sorted; ``stat_names`` the names, aligned."""
    stat_names: list[list[str]]

    def __post_init__(self) -> None:
        self.line_counts = np.asarray([row[6] for row in self.lines], dtype=np.int64)
        self.line_timestamp_ns = np.asarray([row[4] for row in self.lines], dtype=np.int64)
        self.line_plane = np.asarray([row[0] for row in self.lines], dtype=code_dtype(len(self.planes)))
        with_events = self.line_counts > 0
        self.origin_ns = int(self.line_timestamp_ns[with_events].min()) if with_events.any() else 0
        """The earliest timestamp of a line with events: ``start_ps`` counts from it."""
        self.n_events = int(self.line_counts.sum())
        self.line_ends = np.cumsum(self.line_counts)
        """One past each line's last event row: the events are stored line after line."""
        self.stat_offsets = list(np.cumsum([0] + [len(ids) for ids in self.stat_ids])[:-1])
        """Row of each plane's first stat name in all planes' ``stat_names`` laid end to end."""


    def plane_of(self, events: np.ndarray) -> np.ndarray:
        """The plane_id of the events at rows ``events``, from the lines' counts (no array per event kept)."""
        return self.line_plane[run_of_rows(self.line_ends, events)]


@dataclasses.dataclass
class EventFields:
    """Per event, in file order (line after line, as ``SpaceHeaders.line_counts`` count them), its own fields (int64; ``offset_ps`` from its line's timestamp; the serial
    compiled decode's ``metadata_id`` int16 while every id fits), which ``XSpaceDecoder.read_events`` fills; the
    compiled decode also gives each event's row of ``SpaceHeaders.metadata`` (``meta_row``, int32, -1: none),
    which the table builder otherwise looks up. The table builder takes the arrays over one by one."""

    metadata_id: np.ndarray
    offset_ps: np.ndarray
    duration_ps: np.ndarray
    meta_row: np.ndarray | None = None

    @classmethod
    def allocate(cls, headers: SpaceHeaders) -> EventFields:
        return cls(*(np.zeros(headers.n_events, dtype=np.int64) for _ in range(3)))


class StatBatch:
    """The stats of one batch of events, one entry per stat: ``event`` (the event's row), ``name_row``
    (the stat's row in all planes' ``SpaceHeaders.stat_names`` laid end to end; -1 unnamed), and its
    value: ``numbers(rows)`` as raw 64 bits with their kind, ``texts(rows)`` as strings."""

    def __init__(self, stats: dict[str, np.ndarray], strings: _StringResolver):
        self.event = stats["event"]
        self.name_row = stats["name_row"]
        self._stats, self._strings = stats, strings

    def numbers(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(raw 64 bits, value kind: ``DOUBLE``, ``INT64``...) of the given stat rows."""
        return self._stats["raw"][rows], self._stats["kind"][rows]

    def texts(self, rows: np.ndarray) -> list[object]:
        """The given stat rows as strings (refs resolved to their names, numbers written out)."""
        return self._strings.values(rows)

    def text_codes(self, rows: np.ndarray, index: dict[str, int]) -> np.ndarray:
        """The given stat rows as codes in ``index`` (text -> code, grown in first-seen order; -1: none),
        as ``index.setdefault(text, len(index))`` of each of ``texts(rows)`` gives them, decoding each
        distinct value once."""
        return self._strings.codes(rows, index)


class XSpaceDecoder:
    """Decodes the planes that ``planes()`` gives (ids, names, metadata, stats; ``lines`` as each
    line's bytes): ``read_headers`` first, then ``read_events``, then ``close`` (which calls
    ``release`` so that the caller's parse can go before the tables are built)."""

    def __init__(self, planes: Callable[[], Iterable[Any]], errors: list[str], warnings: list[str],
                 release: Callable[[], None] | None = None, jit: Any = None,
                 whole_bytes_stats: Collection[str] = ()):
        """``jit``: the compiled decoder (``jit_kernels()``), or None for the numpy one; ``whole_bytes_stats``:
        metadata stats whose bytes values are kept whole, however long (a reader of the HloProtos)."""
        self.planes = planes
        self.whole_bytes_stats = frozenset(whole_bytes_stats)
        self.errors, self.warnings = errors, warnings
        self.release = release
        self.jit = jit

    def read_headers(self) -> SpaceHeaders:
        """Plane and line headers and the metadata tables, each line parsed to count its events."""
        planes: list[PlaneHeader] = []
        line_rows: list[tuple] = []
        meta_rows: list[tuple] = []
        stat_names: list[list[str]] = []  # per plane: stat metadata names, aligned with stat_ids
        stat_ids: list[np.ndarray] = []
        meta_ids: list[np.ndarray] = []
        meta_offset: list[int] = []
        for plane_index, plane in enumerate(self.planes()):
            names_by_id = {key: value.name for key, value in plane.stat_metadata.items()}
            ids = np.asarray(sorted(names_by_id), dtype=np.int64)
            stat_ids.append(ids)
            stat_names.append([names_by_id[int(key)] for key in ids])
            plane_stats = {names_by_id.get(stat.metadata_id, f"#{stat.metadata_id}"): _stat_value(stat, names_by_id)
                           for stat in plane.stats}
            meta_keys = sorted(plane.event_metadata.keys())
            meta_offset.append(len(meta_rows))
            meta_ids.append(np.asarray(meta_keys, dtype=np.int64))
            for key in meta_keys:
                metadata = plane.event_metadata[key]
                stats = {}
                for stat in metadata.stats:
                    name = names_by_id.get(stat.metadata_id, f"#{stat.metadata_id}")
                    stats[name] = _stat_value(stat, names_by_id, whole=name in self.whole_bytes_stats)
                meta_rows.append((plane_index, int(key), metadata.name, metadata.display_name, stats))
            n_plane_events = 0
            for line_bytes in plane.lines:
                if self.jit is not None:
                    row = _line_header_jit(self.jit, line_bytes, plane_index)
                else:
                    line = _parse_line(line_bytes, plane_index)
                    events = line.events
                    row = (plane_index, line.id, line.name, line.display_name, line.timestamp_ns, line.duration_ps,
                           len(events))
                n_plane_events += row[6]
                line_rows.append(row)
            planes.append(PlaneHeader(xplane_id=plane.id, name=plane.name, stats=plane_stats, n_lines=len(plane.lines),
                                      n_events=n_plane_events, n_event_metadata=len(plane.event_metadata)))
        plane = line = events = None  # the last plane's parse is not kept while the events are decoded
        release_freed_heap()
        return SpaceHeaders(planes=planes, lines=line_rows, metadata=meta_rows, metadata_ids=meta_ids,
                            metadata_offsets=meta_offset, stat_ids=stat_ids, stat_names=stat_names)

    def read_events(self, headers: SpaceHeaders, fields: EventFields,
                    wanted: Collection[str] | None = None) -> Iterator[StatBatch]:
        """Fill ``fields`` batch by batch and yield each batch's stats (those named in ``wanted``, and
        any whose name takes more than its leading field to know; all with None). One batch's buffer
        is alive at a time: drop the batch (``del``) before asking for the next."""
        if self.jit is not None:
            yield from self._read_events_jit(headers, fields, wanted)
            return
        stat_rows = RowLookup(headers.stat_ids, headers.stat_offsets)
        wanted_row = None if wanted is None else np.asarray(
            [name in wanted for names in headers.stat_names for name in names], dtype=bool)
        # lazily, line by line: one line's parse at a time
        line_events = (_parse_line(line_bytes, plane_index).events
                       for plane_index, plane in enumerate(self.planes()) for line_bytes in plane.lines)
        for first_event, holder in _batches(line_events, headers.line_counts):
            chunks = holder.pop()  # the generator keeps only the emptied holder: the bytes go with `del`
            lengths = np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks))
            chunks.append(_PADDING)
            buffer = wire.Buffer(b"".join(chunks), padded=True)
            del chunks
            ends = np.cumsum(lengths)
            starts = ends - lengths
            rows = slice(first_event, first_event + len(starts))
            stat_event, stat_start, stat_end = event_fields(
                buffer, starts, ends, (fields.metadata_id[rows], fields.offset_ps[rows], fields.duration_ps[rows]))
            stat_event += first_event
            stats = _decode_stats(buffer, stat_event, stat_start, stat_end, headers.plane_of(stat_event), stat_rows,
                                  wanted_row)
            del stat_event, stat_start, stat_end
            batch = StatBatch(stats, _StringResolver(_BufferTexts(buffer), stats, headers))
            del buffer, stats
            yield batch
            del batch

    def _read_events_jit(self, headers: SpaceHeaders, fields: EventFields,
                         wanted: Collection[str] | None) -> Iterator[StatBatch]:
        """``read_events`` by the compiled decoder (``jit_wire``): each line's bytes walked once, its
        events' fields written in place and its wanted stats gathered until a batch is full."""
        wanted_row = np.asarray([wanted is None or name in wanted for names in headers.stat_names for name in names],
                                dtype=bool)
        fields.meta_row = np.empty(headers.n_events, dtype=np.int32)  # every row written by the kernel
        threads = decode_threads(headers.n_events)
        if threads > 1:
            yield from self._read_events_threaded(headers, fields, wanted_row, threads)
            return
        jit = self.jit
        # ids in int16 (as the events table keeps them) until one needs more: a quarter of the memory to first touch
        narrow_ids = fields.metadata_id = np.zeros(len(fields.metadata_id), dtype=np.int16)
        wide_ids = _NO_IDS
        stats = _StatArrays(BATCH_EVENTS * 2)
        pieces: list[bytes] = []  # the batch's lines: stat texts are read from each line's bytes
        text_base = batch_events = row = 0
        for plane_index, plane in enumerate(self.planes()):
            stat_ids, stat_row_offset = headers.stat_ids[plane_index], int(headers.stat_offsets[plane_index])
            stat_row_by_id = _dense_rows(stat_ids, stat_row_offset)
            meta_tables = _plane_metadata_rows(headers, plane_index)
            for line_bytes in plane.lines:
                data = np.frombuffer(line_bytes, dtype=np.uint8)
                pos = 0
                while True:
                    n_events, pos, n_stats, error = jit.decode_line_events(
                        data, pos, len(data), BATCH_EVENTS - batch_events, row, text_base, narrow_ids, wide_ids,
                        fields.offset_ps, fields.duration_ps, fields.meta_row, *meta_tables, stat_row_by_id, stat_ids,
                        stat_row_offset, wanted_row, *stats.arrays, stats.n)
                    row += n_events
                    batch_events += n_events
                    stats.n = n_stats
                    if error == jit.FULL:
                        stats.grow()
                        continue
                    if error == jit.WIDE:
                        wide_ids = fields.metadata_id = narrow_ids.astype(np.int64)
                        narrow_ids = _NO_NARROW_IDS
                        continue
                    if error != jit.OK:
                        raise wire.WireError(f"an event of plane {plane_index} does not decode")
                    line_done = pos >= len(data)
                    if batch_events >= BATCH_EVENTS:
                        yield stats.batch(pieces + [line_bytes], headers, fields)
                        pieces, text_base, batch_events = [], 0, 0
                        if line_done:
                            break
                    if line_done:
                        pieces.append(line_bytes)
                        text_base += len(line_bytes)
                        break
                del data
        if batch_events or stats.n:
            yield stats.batch(pieces, headers, fields)

    def _read_events_threaded(self, headers: SpaceHeaders, fields: EventFields, wanted_row: np.ndarray,
                              threads: int) -> Iterator[StatBatch]:
        """``_read_events_jit`` with the kernel run by ``threads`` threads at once: this thread reads the lines
        and groups them, whole, into batches of about ``BATCH_EVENTS`` events, each decoded by a thread into rows
        of ``fields`` of its own (every line's first row is known from the headers) and stat arrays of its own;
        the batches are yielded in file order, so the tables are those of the serial decode. At most one batch
        more than the threads is alive at a time."""
        # imported here: its 5 ms of imports (logging) are none of a small load's
        from concurrent.futures import ThreadPoolExecutor

        line_rows = np.cumsum(headers.line_counts).tolist()
        free: list[_StatArrays] = []  # stat arrays of batches already yielded, for the next ones
        pending: collections.deque = collections.deque()  # (future, its lines, its stat arrays), in file order
        group: list[tuple] = []
        group_events = line_index = 0
        with ThreadPoolExecutor(threads, thread_name_prefix="xspace-decode") as pool:
            def submit() -> None:
                stats = free.pop() if free else _StatArrays(BATCH_EVENTS * 2)
                pending.append((pool.submit(_decode_lines, self.jit, group, stats, fields, wanted_row), group, stats))

            try:
                for plane_index, plane in enumerate(self.planes()):
                    stat_ids, stat_row_offset = headers.stat_ids[plane_index], int(headers.stat_offsets[plane_index])
                    plane_args = (plane_index, _dense_rows(stat_ids, stat_row_offset), stat_ids, stat_row_offset,
                                  _plane_metadata_rows(headers, plane_index))
                    for line_bytes in plane.lines:
                        count = int(headers.line_counts[line_index])
                        group.append((line_bytes, line_rows[line_index] - count, *plane_args))
                        group_events += count
                        line_index += 1
                        if group_events >= BATCH_EVENTS:
                            submit()
                            group, group_events = [], 0
                            while len(pending) > threads:
                                yield from _take_oldest(pending, free, headers, fields, self.jit, wanted_row)
                if group:
                    submit()
                    group = []
                while pending:
                    yield from _take_oldest(pending, free, headers, fields, self.jit, wanted_row)
            finally:  # an error or an early close: no new batch starts; those running end before the pool does
                for future, *_ in pending:
                    future.cancel()

    def close(self) -> None:
        """Drop the parsed planes (the caller's ``release``) and hand their heap back."""
        if self.release is not None:
            self.release()
        self.planes = None  # the parsed message is no longer needed: free it before the tables are built
        release_freed_heap()


_PADDING = bytes(wire.PAD_BYTES)
# the compiled kernel's event metadata ids go to its int16 array while its int64 one is empty, and vice versa
_NO_IDS, _NO_NARROW_IDS = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int16)
PARALLEL_MIN_EVENTS = 1 << 21  # fewer decode serially: at 694 k events (57 MB) threads saved 0.02 s and cost 5 MB of RSS
MAX_DECODE_THREADS = 8  # the Python glue between kernel calls holds the GIL: more threads would wait on it


def decode_threads(n_events: int) -> int:
    """Threads the compiled kernel runs on for a capture of ``n_events`` events: one per core this process may run
    on but the one left to this thread (which reads the lines and fills the columns meanwhile), at most
    ``MAX_DECODE_THREADS``; 1 (the serial decode) for a small capture or two cores. On two cores shared with
    other work, the threads gained only while the other core was idle, and cost sys time and ~10 MB of peak RSS
    (``benchmarks/capture_memory.py``)."""
    if n_events < PARALLEL_MIN_EVENTS:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cores = os.cpu_count() or 1
    threads = min(cores - 1, MAX_DECODE_THREADS)
    return threads if threads >= 2 else 1


def _decode_lines(jit: Any, lines: list[tuple], stats: _StatArrays, fields: EventFields, wanted_row: np.ndarray,
                  resume: tuple[int, int, int, int] = (0, 0, -1, 0)) -> tuple[int, int, int, int] | None:
    """One batch of whole lines ((bytes, first event row, plane index, its stat tables)) by the compiled kernel:
    their events' fields into their rows of ``fields``, their stats into ``stats``. Returns None when done, else
    where to resume (line, byte, row, text base) once ``stats`` has grown: a decoder thread allocates nothing, for
    what a thread's own heap arena takes stays with the process (RSS 10-20 MB higher on 256 MB)."""
    first_line, pos, row, text_base = resume
    for index in range(first_line, len(lines)):
        line_bytes, first_row, plane_index, stat_row_by_id, stat_ids, stat_row_offset, meta_tables = lines[index]
        data = np.frombuffer(line_bytes, dtype=np.uint8)
        if index > first_line or row < 0:
            pos, row = 0, first_row
        n_events, pos, stats.n, error = jit.decode_line_events(
            data, pos, len(data), len(data), row, text_base, _NO_NARROW_IDS, fields.metadata_id, fields.offset_ps,
            fields.duration_ps, fields.meta_row, *meta_tables, stat_row_by_id, stat_ids, stat_row_offset, wanted_row,
            *stats.arrays, stats.n)
        if error == jit.FULL:
            return index, pos, row + n_events, text_base
        if error != jit.OK:
            raise wire.WireError(f"an event of plane {plane_index} does not decode")
        text_base += len(line_bytes)
    return None


def _take_oldest(pending: collections.deque, free: list[_StatArrays], headers: SpaceHeaders, fields: EventFields,
                 jit: Any, wanted_row: np.ndarray) -> Iterator[StatBatch]:
    """Yield the oldest pending batch once decoded (its rest decoded here, in larger arrays, where its stats did
    not fit); its stat arrays serve a later batch after the caller drops it."""
    future, lines, stats = pending.popleft()
    resume = future.result()
    while resume is not None:
        stats.grow()
        resume = _decode_lines(jit, lines, stats, fields, wanted_row, resume)
    batch = stats.batch([line[0] for line in lines], headers, fields)
    del lines
    yield batch
    del batch
    free.append(stats)


DENSE_STAT_IDS = 1 << 20  # a plane whose stat ids are all below this is looked up in a table, not searched


def _plane_metadata_rows(headers: SpaceHeaders, plane_index: int) -> tuple[np.ndarray, np.ndarray, int]:
    """A plane's event metadata ids as the compiled kernel looks them up: (row by id, or empty where the ids are not
    small counters; the sorted ids; the row of the first)."""
    ids, offset = headers.metadata_ids[plane_index], int(headers.metadata_offsets[plane_index])
    return _dense_rows(ids, offset), ids, offset


def _dense_rows(ids: np.ndarray, offset: int) -> np.ndarray:
    """Row by id (-1: none) of a plane's sorted stat or event metadata ids where they are small counters; empty
    otherwise."""
    if not len(ids) or ids[0] < 0 or ids[-1] >= DENSE_STAT_IDS:
        return np.zeros(0, dtype=np.int64)
    table = np.full(int(ids[-1]) + 1, -1, dtype=np.int64)
    table[ids] = np.arange(offset, offset + len(ids), dtype=np.int64)
    return table


class _StatArrays:
    """The compiled decoder's stat output for one batch, grown when an event needs more room; the
    same arrays serve every batch (fresh ones would page-fault in again each time), so a batch's
    stats are views that the next batch overwrites: ``read_events``' rule, drop one before the next."""

    def __init__(self, capacity: int):
        self.n = 0
        self.arrays = self._allocate(capacity)

    @staticmethod
    def _allocate(capacity: int) -> list[np.ndarray]:
        # event, name_row, kind, raw, text_start, text_length
        return [np.empty(capacity, dtype=dtype) for dtype in (np.int64, np.int32, np.int8, np.uint64, np.int64,
                                                              np.int64)]

    def grow(self) -> None:
        larger = self._allocate(2 * len(self.arrays[0]))
        for old, new in zip(self.arrays, larger, strict=True):
            new[:self.n] = old[:self.n]
        self.arrays = larger

    def batch(self, pieces: list[bytes], headers: SpaceHeaders, fields: EventFields) -> StatBatch:
        """The stats gathered so far as a ``StatBatch`` over its lines' bytes."""
        event, name_row, kind, raw, text_start, text_length = (array[:self.n] for array in self.arrays)
        self.n = 0
        stats = {"event": event, "name_row": name_row, "kind": kind, "raw": raw, "text_start": text_start,
                 "text_length": text_length}
        return StatBatch(stats, _StringResolver(_LineTexts(pieces), stats, headers))


class _LineTexts:
    """The stat texts of a batch of lines, read from each line's own bytes (positions count from the
    first line's start, the lines laid end to end): no joined copy of the batch's bytes."""

    def __init__(self, lines: list[bytes]):
        self.lines = lines
        sizes = np.asarray([len(line) for line in lines], dtype=np.int64)
        self.ends = np.cumsum(sizes)
        self.firsts = self.ends - sizes

    def slices(self, starts: np.ndarray, lengths: np.ndarray) -> list[bytes]:
        """The bytes at each (start, length)."""
        if len(self.lines) == 1:
            data = self.lines[0]
            return [data[start:end] for start, end in zip(starts.tolist(), (starts + lengths).tolist(), strict=True)]
        # a text lies within one line: the one whose end is past its start (an empty line ends where the next starts)
        line = np.minimum(np.searchsorted(self.ends, starts, side="right"), len(self.lines) - 1)
        local = starts - self.firsts[line]
        lines = self.lines
        return [lines[index][start:end]
                for index, start, end in zip(line.tolist(), local.tolist(), (local + lengths).tolist(), strict=True)]


class _BufferTexts:
    """The stat texts of a batch decoded by numpy, read from its joined buffer."""

    def __init__(self, buffer: wire.Buffer):
        self.buffer = buffer
        self._data: bytes | None = None

    def slices(self, starts: np.ndarray, lengths: np.ndarray) -> list[bytes]:
        if self._data is None:
            self._data = self.buffer.data()
        data = self._data
        return [data[start:end] for start, end in zip(starts.tolist(), (starts + lengths).tolist(), strict=True)]


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


class _StringResolver:
    """String values of stat rows: str values decoded once per distinct value, refs resolved to names.
    ``texts``: where their bytes are read (``_LineTexts``, ``_BufferTexts``)."""

    def __init__(self, texts, stats, headers: SpaceHeaders):
        self.texts, self.stats, self.headers = texts, stats, headers
        self.stat_ids, self.stat_names = headers.stat_ids, headers.stat_names

    def _planes(self, rows: np.ndarray) -> np.ndarray:
        """The plane of the stats at ``rows`` (a ref's name is its plane's): the batch's where it has them."""
        if "plane" in self.stats:
            return self.stats["plane"][rows]
        return self.headers.plane_of(self.stats["event"][rows])

    def codes(self, rows: np.ndarray, index: dict[str, int]) -> np.ndarray:
        kinds = self.stats["kind"][rows]
        if not ((kinds == STR) | (kinds == BYTES)).all():  # refs and numbers written out: one by one
            return np.fromiter((-1 if v is None else index.setdefault(v, len(index)) for v in self.values(rows)),
                               dtype=np.int32, count=len(rows))
        chunks = self.texts.slices(self.stats["text_start"][rows], self.stats["text_length"][rows])
        code_of = dict.fromkeys(chunks)  # distinct values in first-seen order
        for chunk in code_of:
            code_of[chunk] = index.setdefault(chunk.decode("utf-8", errors="replace"), len(index))
        return np.fromiter(map(code_of.__getitem__, chunks), dtype=np.int32, count=len(chunks))

    def values(self, rows: np.ndarray) -> list[object]:
        stats = self.stats
        kinds = stats["kind"][rows]
        is_text = (kinds == STR) | (kinds == BYTES)
        chunks = iter(self.texts.slices(stats["text_start"][rows][is_text], stats["text_length"][rows][is_text]))
        cache: dict[bytes, str] = {}
        out: list[object] = []
        for kind, raw, plane in zip(kinds.tolist(), stats["raw"][rows].tolist(), self._planes(rows).tolist(),
                                    strict=True):
            if kind == STR or kind == BYTES:
                chunk = next(chunks)
                text = cache.get(chunk)
                if text is None:
                    text = cache[chunk] = chunk.decode("utf-8", errors="replace")
                out.append(text)
            elif kind == REF:
                ids = self.stat_ids[plane]
                position = int(np.searchsorted(ids, raw))
                out.append(self.stat_names[plane][position] if position < len(ids) and ids[position] == raw else None)
            elif kind == DOUBLE:
                out.append(repr(np.uint64(raw).view(np.float64).item()))
            elif kind == INT64:
                out.append(str(np.uint64(raw).view(np.int64).item()))
            else:
                out.append(str(raw))
        return out


_TAG_METADATA_ID = 0x08  # an XStat's metadata_id (field 1, varint) as protobuf writes its tag


def _field_end(buffer: wire.Buffer, pos: np.ndarray) -> np.ndarray:
    """Where the XStat value field at each position ends; -1 where the bytes there are not one."""
    tag = buffer.bytes[pos]
    value_pos = pos + 1
    end = np.full(len(pos), -1, dtype=np.int64)
    varint = np.flatnonzero((tag == 0x18) | (tag == 0x20) | (tag == 0x38))
    end[varint] = value_pos[varint] + wire.varint_lengths(buffer, value_pos[varint])
    double = tag == 0x11
    end[double] = value_pos[double] + 8
    text = np.flatnonzero((tag == 0x2A) | (tag == 0x32))
    if len(text):
        lengths, length_bytes = wire.read_varints(buffer, value_pos[text])
        end[text] = value_pos[text] + length_bytes + lengths.astype(np.int64)
    return end


def _decode_stats(buffer: wire.Buffer, event: np.ndarray, starts: np.ndarray, ends: np.ndarray, plane: np.ndarray,
                  stat_rows: RowLookup, wanted_row: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Decode XStat messages at the given spans (of events ``event`` on planes ``plane``) into
    parallel arrays: metadata_id (field 1) and its row in the stat names (``name_row``), then the
    one value field; stats laid out otherwise go through the generic field walk.

    With ``wanted_row`` (per stat name row: decode it?) a stat of another name is left out before
    its value is decoded, where it names itself: laid out as writers lay it out, its metadata_id then
    one value field (or none). Any other is kept, for all its fields decide its name."""
    data = buffer.bytes
    pos = starts.astype(np.int64, copy=True)
    metadata_id = np.zeros(len(event), dtype=np.int64)
    hit = np.flatnonzero((data[pos] == _TAG_METADATA_ID) & (pos < ends))
    if len(hit):
        values, lengths = wire.read_varints(buffer, pos[hit] + 1)
        metadata_id[hit] = values.view(np.int64)
        pos[hit] += lengths + 1
    name_row = stat_rows.lookup(plane, metadata_id)
    if wanted_row is not None and len(hit):
        unwanted = hit[~gather(wanted_row, name_row[hit], missing=False)]
        alone = (pos[unwanted] == ends[unwanted]) | (_field_end(buffer, pos[unwanted]) == ends[unwanted])
        keep = np.ones(len(event), dtype=bool)
        keep[unwanted[alone]] = False
        if not keep.all():
            event, starts, ends, plane = event[keep], starts[keep], ends[keep], plane[keep]
            pos, metadata_id, name_row = pos[keep], metadata_id[keep], name_row[keep]
    n = len(event)
    kind = np.zeros(n, dtype=np.int8)
    raw = np.zeros(n, dtype=np.uint64)  # varint value or the fixed64 bits of a double
    text_start = np.zeros(n, dtype=np.int64)
    text_length = np.zeros(n, dtype=np.int64)
    tag = np.where(pos < ends, data[pos], 0)
    value_pos = pos + 1
    varint = np.flatnonzero((tag == 0x18) | (tag == 0x20) | (tag == 0x38))
    values, lengths = wire.read_varints(buffer, value_pos[varint])
    kind[varint] = tag[varint] >> 3
    raw[varint] = values
    pos[varint] = value_pos[varint] + lengths
    double = np.flatnonzero(tag == 0x11)
    if len(double):
        kind[double] = DOUBLE
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
            for number in (UINT64, INT64, REF):
                hit = (field == number) & (wire_type == wire.WIRE_VARINT)
                kind[rows[hit]] = number
                raw[rows[hit]] = value[hit]
            hit = (field == DOUBLE) & (wire_type == wire.WIRE_FIXED64)
            if hit.any():
                kind[rows[hit]] = DOUBLE
                raw[rows[hit]] = wire.read_fixed64(buffer, value_pos[hit])
            for number in (STR, BYTES):
                hit = (field == number) & (wire_type == wire.WIRE_LEN)
                kind[rows[hit]] = number
                text_start[rows[hit]] = value_pos[hit]
                text_length[rows[hit]] = length[hit]
        name_row[irregular] = stat_rows.lookup(plane[irregular], metadata_id[irregular])
    return {"event": event, "plane": plane, "metadata_id": metadata_id, "name_row": name_row, "kind": kind,
            "raw": raw, "text_start": text_start, "text_length": text_length}


def _stat_value(stat: Any, names_by_id: dict[int, str], *, whole: bool = False) -> object:
    which = stat.WhichOneof("value")
    if which == "ref_value":
        return names_by_id.get(stat.ref_value)
    if which == "bytes_value":
        value = stat.bytes_value
        return value if whole or len(value) <= BIG_BYTES_STAT else f"<{len(value)} bytes>"
    if which is None:
        return None
    return getattr(stat, which)


def _line_header_jit(jit: Any, data: bytes, plane_index: int) -> tuple:
    """A ``LINE_FIELDS`` row of an XLine's bytes by the compiled decoder; where it finds the bytes
    malformed, protobuf's parse says so (or, where protobuf takes them, ``WireError`` all the same)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    line_id, timestamp_ns, duration_ps, name_at, name_length, display_at, display_length, n_events, error = (
        jit.line_header(buf))
    try:
        if error != jit.OK:
            raise ValueError("malformed")
        name = data[name_at:name_at + name_length].decode("utf-8")
        display_name = data[display_at:display_at + display_length].decode("utf-8")
    except ValueError:
        _parse_line(data, plane_index)
        raise wire.WireError(f"a line of plane {plane_index} does not decode") from None
    return plane_index, line_id, name, display_name, timestamp_ns, duration_ps, n_events


def jit_kernels(*, compile_if_missing: bool = True) -> Any:
    """The compiled decoder (``compiled.Kernels``), None where numba or llvmlite is missing or does not
    load, or (``compile_if_missing`` false) where this machine has not compiled it yet."""
    from tpudoctor.captures.xspace import compiled

    return compiled.kernels(compile_if_missing)


def _parse_line(data: bytes, plane_index: int):
    """An XLine (events as bytes) from its bytes; ``WireError`` when they do not decode."""
    try:
        return message_class("XLine", raw=True).FromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
        raise wire.WireError(f"a line of plane {plane_index} does not decode") from exc


def release_freed_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc ``malloc_trim``): protobuf's parse
    frees many small blocks that would otherwise stay in this process while the tables are built."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim`` from this process's own symbols (no library search: ``find_library``
    runs ``ldconfig``); None where the C library has none (musl, macOS)."""
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
