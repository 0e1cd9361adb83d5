"""Columns and frames: an ``XSpaceDecoder``'s planes, lines, metadata and event stats as the pandas
tables of a ``HostProfile``.

The event stats go into one column each (``LoadOptions.columns``), filled batch by batch; an
event without its own value takes its metadata's (XLA's static op facts). Ids are stored in the
narrowest integer type that holds them, names as categoricals, integer stats as nullable arrays in
64 bits, those that label things (``LABEL_STATS``: step numbers, group ids) in the narrowest type
that holds their values. Each per-event temporary is dropped as soon as its last column is built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from tpudoctor.captures.xspace.columns import (
    CORE_STAT_COLUMNS,
    DEVICE_PLANE_PREFIXES,
    EVENT_STAT_COLUMNS,
    LABEL_STATS,
    LoadOptions,
)
from tpudoctor.captures.xspace.decoder import (
    DOUBLE,
    INT64,
    LINE_FIELDS,
    UINT64,
    EventFields,
    SpaceHeaders,
    StatBatch,
    XSpaceDecoder,
)
from tpudoctor.captures.xspace.host_profile import (
    HostProfile,
    SparseStat,
    as_text,
    label_codes,
    numbers_of,
)
from tpudoctor.captures.xspace.lookup import RowLookup, code_dtype, gather

if TYPE_CHECKING:
    import pandas as pd

SPARSE_CODE_SAMPLE = 1 << 16  # values of a sparse stat looked at first: few distinct ones there, then codes tried
SPARSE_MAX_CODES = 127  # a sparse stat of at most this many distinct values is kept as int8 codes into them
SPARSE_TEXT_MAX_SHARE = 0.2  # a text stat kept sparse on at most this share of the events (a code: 1 byte, a row: 4)
METADATA_FILL_CHUNK = 1 << 20  # events given their metadata's value at a time: bounded temporaries on big captures
PLANE_FIELDS = ("plane_id", "xplane_id", "plane_name", "device_kind", "is_device", "n_lines", "n_events",
                "n_event_metadata")


def build_host_profile(decoder: XSpaceDecoder, options: LoadOptions, *, hostname: str, source: str,
                       file_size_bytes: int) -> HostProfile:
    """The tables of the planes ``decoder`` reads (``wire.WireError`` where their bytes do not decode)."""
    columns = options.columns
    headers = decoder.read_headers()
    fields = EventFields.allocate(headers)
    sinks = {column: _sink_of(kind, column in options.sparse_stats, headers.n_events)
             for column, kind in columns.items()}
    _fill_stat_columns(decoder.read_events(headers, fields, wanted=sinks.keys()), headers, sinks)
    errors, warnings = decoder.errors, decoder.warnings
    decoder.close()
    import pandas as pd  # here, after the decode: the decoder needs none

    # metadata row of every event (-1: id not in its plane's table)
    meta_row = fields.meta_row  # the compiled decoder's; the numpy one's looked up here
    if meta_row is None:
        meta_row = RowLookup(headers.metadata_ids, headers.metadata_offsets).lookup(
            np.repeat(headers.line_plane, headers.line_counts), fields.metadata_id)
    fields.meta_row = None
    fields.metadata_id = _narrowed(fields.metadata_id, np.int16)
    event_metadata = _metadata_frame(headers.metadata, columns)
    metadata_rows = _MetadataRows.of(meta_row, event_metadata, headers)
    sparse_stats = _sparse_stats(sinks, event_metadata, metadata_rows, options.sparse_stats)
    stat_arrays, from_metadata = _stat_arrays(sinks, event_metadata, metadata_rows, options.metadata_stats)
    name = _categorical(event_metadata["name"].tolist(), meta_row)
    del meta_row, metadata_rows
    events = _events_frame(headers, fields, name, stat_arrays, columns, from_metadata | set(sparse_stats))
    del fields, name, stat_arrays
    lines = pd.DataFrame(headers.lines, columns=list(LINE_FIELDS))
    planes = pd.DataFrame([
        (plane_id, p.xplane_id, p.name, _device_kind(p.name, p.stats), p.name.startswith(DEVICE_PLANE_PREFIXES),
         p.n_lines, p.n_events, p.n_event_metadata) for plane_id, p in enumerate(headers.planes)
    ], columns=list(PLANE_FIELDS))
    return HostProfile(
        hostname=hostname, source=source, planes=planes, lines=lines, events=events,
        event_metadata=event_metadata, plane_stats={plane_id: p.stats for plane_id, p in enumerate(headers.planes)},
        time_origin_ns=headers.origin_ns, file_size_bytes=file_size_bytes, errors=errors, warnings=warnings,
        metadata_stats=frozenset(from_metadata), sparse_stats=sparse_stats,
    )


def _sink_of(kind: str, sparse: bool, n_events: int) -> _ColumnSink:
    """Where a stat's values go while the events are decoded: a column, or entries at the events that carry it."""
    if not sparse:
        return _ColumnSink(kind, n_events)
    return _SparseTextSink(kind, n_events) if kind == "str" else _SparseSink(kind, n_events)


def _fill_stat_columns(batches: Iterable[StatBatch], headers: SpaceHeaders, sinks: dict[str, _ColumnSink]) -> None:
    """Each batch's stats into the column of their name (stats of other names are skipped)."""
    column_number = {name: index for index, name in enumerate(sinks)}
    # stat name row (all planes' names end to end) -> event column number (-1: not a column)
    stat_column_table = np.asarray([column_number.get(name, -1) for names in headers.stat_names for name in names],
                                   dtype=np.int16)  # int16: a radix sort below
    for batch in batches:
        stat_column = gather(stat_column_table, batch.name_row)
        order = np.argsort(stat_column, kind="stable")
        bounds = np.searchsorted(stat_column[order], np.arange(len(sinks) + 1))
        for index, sink in enumerate(sinks.values()):
            rows = order[bounds[index]:bounds[index + 1]]
            if len(rows):
                targets = batch.event[rows]
                if sink.kind == "str":
                    sink.put_codes(targets, batch.text_codes(rows, sink.categories))
                else:
                    sink.put(targets, *batch.numbers(rows))
        del batch  # one batch's buffer at a time: the next one is decoded once this one is gone


def _sparse_stats(sinks: dict[str, _ColumnSink], event_metadata: pd.DataFrame, meta_row: _MetadataRows,
                  names: Collection[str]) -> dict[str, SparseStat]:
    """The stats of ``names`` kept at the events that carry them (taken out of ``sinks``), those present on
    the same events sharing one array of rows; a text stat on more than ``SPARSE_TEXT_MAX_SHARE`` of the
    events, at rows no other stat shares, stays a column (a code a byte an event, less than a row number)."""
    out: dict[str, SparseStat] = {}
    for column in [c for c in sinks if c in names]:
        sink = sinks[column]
        if column in event_metadata.columns:
            sink.fill_from_metadata(event_metadata[column], meta_row)
            sink.filled = True
        stat = sink.sparse(narrow=column in LABEL_STATS)
        same_rows = next((known.rows for known in out.values() if np.array_equal(known.rows, stat.rows)), None)
        if stat.is_text and same_rows is None and len(stat) > SPARSE_TEXT_MAX_SHARE * sink.n_events:
            continue  # a text stat on many events, at rows of its own: its column is smaller
        del sinks[column]
        sink.release()
        out[column] = stat if same_rows is None else dataclasses.replace(stat, rows=same_rows)
    return out


def _stat_arrays(sinks: dict[str, _ColumnSink], event_metadata: pd.DataFrame, meta_row: _MetadataRows,
                 metadata_stats: Collection[str]) -> tuple[dict[str, Any], set[str]]:
    """(the stat columns, the stats left on the metadata): each column takes its final form, with its
    metadata's values where an event has none, and its sink is emptied before the next is filled."""
    stat_arrays: dict[str, Any] = {}
    masks = _SharedMasks()
    from_metadata = set()
    for column, sink in sinks.items():
        if (column in metadata_stats and sink.values is None and sink.kind in ("int", "uint")
                and column in event_metadata.columns):
            from_metadata.add(column)  # no event carries its own: read from the metadata when asked
            continue
        if column in event_metadata.columns and not sink.filled:
            sink.fill_from_metadata(event_metadata[column], meta_row)
        if sink.values is not None or column in CORE_STAT_COLUMNS:
            stat_arrays[column] = sink.array(masks, narrow=column in LABEL_STATS)
        sink.release()
    return stat_arrays, from_metadata


def _events_frame(headers: SpaceHeaders, fields: EventFields, name: pd.Categorical, stat_arrays: dict[str, Any],
                  columns: dict[str, str], elsewhere: set[str]) -> pd.DataFrame:
    """The events table; ``fields``' per-event arrays become its columns or are dropped on the way. Stats
    ``elsewhere`` (the metadata's, the sparse ones) get no column, nor do the line's own columns
    (``LINE_COLUMNS``): the events are stored line after line, and ``HostProfile`` reads those from ``lines``."""
    import pandas as pd

    start_ps = fields.offset_ps
    first_row = 0
    for count, timestamp_ns in zip(headers.line_counts.tolist(), headers.line_timestamp_ns.tolist(), strict=True):
        start_ps[first_row:first_row + count] += (timestamp_ns - headers.origin_ns) * 1000  # in place, line by line
        first_row += count
    frame: dict[str, Any] = {
        "metadata_id": fields.metadata_id,
        "name": name,
        "start_ps": start_ps,
        "duration_ps": fields.duration_ps,
        **stat_arrays,
    }
    for column in CORE_STAT_COLUMNS:  # there, all-missing, when asked for and the capture has none
        if column not in frame and column in columns and column not in elsewhere:
            frame[column] = missing_column(EVENT_STAT_COLUMNS[column], headers.n_events)
    return pd.DataFrame(frame, copy=False)


def missing_column(kind: str, n_events: int):
    """A stat column of this kind with no value (a read-only view: it costs no memory)."""
    return _ColumnSink(kind, n_events).array()



class _ColumnSink:
    """One stat column filled batch by batch; never-filled columns cost no memory (read-only NA views)."""

    def __init__(self, kind: str, n_events: int):
        self.kind = kind
        self.n_events = n_events
        self.values: np.ndarray | None = None
        self.present: np.ndarray | None = None
        self.categories: dict[str, int] = {}
        self.filled = False  # given its metadata's values already

    def _allocate(self) -> None:
        if self.values is not None:
            return
        if self.kind == "str":  # category code + 1, so that 0 (calloc'd, never touched) is "no value"
            self.values = np.zeros(self.n_events, dtype=np.int16)  # int32 once there are more categories
        elif self.kind == "float":
            self.values = np.full(self.n_events, np.nan)
        else:
            self.values = np.zeros(self.n_events, dtype=np.uint64 if self.kind == "uint" else np.int64)
            self.present = np.zeros(self.n_events, dtype=bool)

    def _codes(self, values: list[object]) -> np.ndarray:
        index = self.categories
        return np.fromiter((-1 if v is None else index.setdefault(as_text(v), len(index)) for v in values),
                           dtype=np.int32, count=len(values))

    def put_codes(self, targets: np.ndarray, codes: np.ndarray) -> None:
        """Store a str column's values as their codes in ``categories`` (-1: none)."""
        self._allocate()
        codes += 1
        self._hold(len(self.categories))
        self.values[targets] = codes

    def _hold(self, n_categories: int) -> None:
        """A str column's codes widened to int32 when its categories outgrow int16."""
        if n_categories >= np.iinfo(self.values.dtype).max:
            self.values = self.values.astype(np.int32)

    def put(self, targets: np.ndarray, values: Any, kinds: np.ndarray | None = None) -> None:
        """Store a number column's values: raw 64-bit values with their XStat kinds."""
        self._allocate()
        if self.kind == "float":
            self.values[targets] = _as_floats(values, kinds)
            return
        numbers, present = _as_integers(values, kinds, self.values.dtype)
        self.values[targets] = numbers
        self.present[targets] = present

    def fill_from_metadata(self, meta_series: pd.Series, meta_row: _MetadataRows) -> None:
        """Where an event has no own value, take its metadata's."""
        import pandas as pd

        if self.kind == "str":
            meta_values = [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v
                           for v in meta_series.tolist()]
            valid = np.asarray([v is not None for v in meta_values], dtype=bool)
        else:
            dtype = np.float64 if self.kind == "float" else np.uint64 if self.kind == "uint" else np.int64
            numbers, valid = numbers_of(meta_series, dtype)
        if not valid.any():
            return
        # metadata rows with a value, as a lookup that row -1 (no metadata) also indexes
        valid_row = np.append(valid, False)
        filling = None  # per metadata row, then row -1: the value an event without its own takes
        for low, chunk_rows in meta_row.chunks(valid):  # the planes whose metadata has a value, a chunk at a time
            takes = valid_row[chunk_rows]
            if not takes.any():
                continue
            self._allocate()
            if filling is None:
                if self.kind == "str":  # categories in the same order as before: only once an event takes one
                    filling = np.append(self._codes(meta_values) + 1, np.int32(0))
                    self._hold(len(self.categories))
                else:
                    filling = np.append(numbers, numbers.dtype.type(0))
            own = self.values[low:low + len(chunk_rows)]  # a view: written in place
            if self.kind == "str":
                takes &= own == 0
            elif self.kind == "float":
                takes &= np.isnan(own)
            else:
                present = self.present[low:low + len(chunk_rows)]
                takes &= ~present
                present |= takes
            np.copyto(own, filling[chunk_rows], where=takes)

    def release(self) -> None:
        self.values = self.present = None

    def sparse(self, *, narrow: bool = False) -> SparseStat:
        """A text column as ``HostProfile.sparse_stats`` keeps it: codes into its categories at the rows
        that have one."""
        if self.kind != "str":
            raise ValueError(f"a {self.kind} stat is kept sparse by _SparseSink")
        categories = np.array(list(self.categories), dtype=object)
        row_dtype = np.int32 if self.n_events < 2**31 else np.int64
        if self.values is None:
            return SparseStat(np.zeros(0, row_dtype), categories, np.zeros(0, code_dtype(len(categories))))
        rows = np.flatnonzero(self.values)
        codes = np.subtract(self.values[rows], 1, dtype=code_dtype(len(categories)), casting="unsafe")
        return SparseStat(rows.astype(row_dtype), categories, codes)

    def array(self, masks: _SharedMasks | None = None, *, narrow: bool = False):
        """The column as pandas keeps it; ``narrow``: integers in the narrowest type that holds them."""
        import pandas as pd

        n = self.n_events
        if self.kind == "str":
            categories = pd.Index(list(self.categories), dtype=object)
            if self.values is None:
                return pd.Categorical.from_codes(np.broadcast_to(np.int8(-1), (n,)), categories=categories)
            codes = np.subtract(self.values, 1, dtype=code_dtype(len(categories)), casting="unsafe")
            return pd.Categorical.from_codes(codes, categories=categories, validate=False)
        if self.kind == "float":
            return self.values if self.values is not None else np.broadcast_to(np.float64(np.nan), (n,))
        if self.values is None:
            dtype = np.uint64 if self.kind == "uint" else np.int64
            return pd.arrays.IntegerArray(np.broadcast_to(dtype(0), (n,)), np.broadcast_to(np.True_, (n,)))
        missing = ~self.present
        values = _narrowest_holding(self.values, self.present) if narrow else self.values
        return pd.arrays.IntegerArray(values, masks.shared(missing) if masks is not None else missing)


def _as_floats(values: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Raw 64-bit stat values as float64 (NaN where not a number)."""
    doubles = kinds == DOUBLE
    signed = kinds == INT64
    unsigned = kinds == UINT64
    out = np.full(len(values), np.nan)
    out[doubles] = values.view(np.float64)[doubles]
    out[signed] = values[signed].view(np.int64)
    out[unsigned] = values[unsigned]
    return out


def _as_integers(values: np.ndarray, kinds: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, Any]:
    """(numbers, present) of raw 64-bit stat values as integers of ``dtype``: integers keep their 64
    bits exactly; a double is truncated when it fits, else missing, as is a value of another kind."""
    if len(kinds) and kinds.min() == kinds.max() and kinds[0] in (INT64, UINT64):
        return values.view(dtype), True  # as writers write integer stats: one kind, no conversion, no copy
    doubles = kinds == DOUBLE
    integers = (kinds == INT64) | (kinds == UINT64)
    if not doubles.any():
        return values.view(dtype), integers
    as_float = values.view(np.float64)
    limits = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):
        double_fits = doubles & np.isfinite(as_float) & (as_float >= float(limits.min)) & (as_float < float(limits.max))
    out = values.view(dtype).copy()
    out[double_fits] = as_float[double_fits].astype(dtype)
    return out, integers | double_fits


class _SparseSink(_ColumnSink):
    """An integer stat kept only at the events that carry it (``SparseStat``): each batch's rows and
    values appended to buffers of one entry per event (whose pages cost memory only once written: the
    few events that carry the stat), joined when the last batch is in; an event's later value of the
    stat wins, as in a column."""

    def __init__(self, kind: str, n_events: int):
        super().__init__(kind, n_events)
        self.row_dtype = np.int32 if n_events < 2**31 else np.int64
        self.number_dtype = np.dtype(np.uint64 if kind == "uint" else np.int64)
        self.buffers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # rows, values, present
        self.count = 0
        self.rows: np.ndarray | None = None

    def _allocate(self) -> None:
        """Nothing per event: ``values`` (then ``rows``) holds only the events' own values."""

    def put(self, targets: np.ndarray, values: Any, kinds: np.ndarray | None = None) -> None:
        self._append(targets, *_as_integers(values, kinds, self.number_dtype))

    def _append(self, targets: np.ndarray, numbers: np.ndarray, present: Any) -> None:
        end = self.count + len(targets)
        if self.buffers is None or end > len(self.buffers[0]):
            self._grow(end)
        rows, buffered, flags = self.buffers
        rows[self.count:end] = targets
        buffered[self.count:end] = numbers
        flags[self.count:end] = present
        self.count = end

    def _grow(self, needed: int) -> None:
        """Buffers for ``needed`` entries: one per event first (an event carrying the stat twice needs more)."""
        capacity = max(self.n_events, needed, 2 * len(self.buffers[0]) if self.buffers is not None else 0)
        grown = (np.empty(capacity, self.row_dtype), np.empty(capacity, self.number_dtype), np.empty(capacity, bool))
        if self.buffers is not None:
            for old, new in zip(self.buffers, grown, strict=True):
                new[:self.count] = old[:self.count]
        self.buffers = grown

    def _joined(self) -> None:
        """The buffered entries as ascending ``rows`` and their ``values``, the last value of an event kept."""
        if self.rows is not None or self.buffers is None:
            return
        rows, values, present = (buffer[:self.count] for buffer in self.buffers)
        self.buffers = None
        if len(rows) > 1 and not np.all(rows[1:] > rows[:-1]):
            order = np.argsort(rows, kind="stable")
            rows, values, present = rows[order], values[order], present[order]
            last = np.append(rows[1:] != rows[:-1], True)
            rows, values, present = rows[last], values[last], present[last]
        # the buffers' filled starts as they are: their pages past the entries were never written, so never in memory
        self.rows, self.values = (rows, values) if present.all() else (rows[present], values[present])

    def fill_from_metadata(self, meta_series: pd.Series, meta_row: _MetadataRows) -> None:
        """Where an event has no own value, take its metadata's: new rows, merged with the own ones."""
        numbers, valid = numbers_of(meta_series, self.number_dtype)
        if not valid.any() or not len(meta_row.rows):
            return
        self._joined()
        new_rows, _ = self._taking(valid, meta_row)
        if len(new_rows):
            self._merge(new_rows, numbers[meta_row.rows[new_rows]])

    def _taking(self, valid: np.ndarray, meta_row: _MetadataRows) -> tuple[np.ndarray, bool]:
        """(the rows, ascending, of the events without an own value whose metadata row ``valid`` marks; whether
        any event has such a metadata row, own value or not)."""
        own = np.zeros(len(meta_row.rows), bool)
        if self.rows is not None:
            own[self.rows] = True
        valid_row = np.append(valid, False)  # row -1 (no metadata) takes nothing
        taken, any_valid = [], False
        for low, chunk_rows in meta_row.chunks(valid):
            takes = valid_row[chunk_rows]
            any_valid = any_valid or bool(takes.any())
            taken.append(np.flatnonzero(takes & ~own[low:low + len(chunk_rows)]) + low)
        del own
        rows = np.concatenate(taken).astype(self.row_dtype) if taken else np.zeros(0, self.row_dtype)
        return rows, any_valid

    def _merge(self, new_rows: np.ndarray, values: np.ndarray) -> None:
        """``new_rows`` (ascending, none of them the sink's own) with their ``values``, merged into the own ones."""
        if self.rows is None:
            self.rows, self.values = new_rows, values
            return
        at = np.searchsorted(self.rows, new_rows)  # both ascending, no row in both: a merge, no sort
        self.rows, self.values = np.insert(self.rows, at, new_rows), np.insert(self.values, at, values)

    def sparse(self, *, narrow: bool = False) -> SparseStat:
        """The stat as ``HostProfile.sparse_stats`` keeps it (no rows where no event carries it); a stat
        of few distinct values as codes into them; ``narrow``: values in the narrowest type that holds
        them, as a label stat's column."""
        import pandas as pd

        self._joined()
        if self.rows is None:  # all-missing, as a column of ``CORE_STAT_COLUMNS`` would be
            return SparseStat(np.zeros(0, np.int32), np.zeros(0, np.uint64 if self.kind == "uint" else np.int64))
        rows = self.rows
        if narrow:
            self.values = _narrowest_holding(self.values, np.ones(len(self.values), bool))
        if len(pd.unique(self.values[:SPARSE_CODE_SAMPLE])) <= SPARSE_MAX_CODES:
            distinct = np.sort(pd.unique(self.values))  # a hash of each value, not a sort of them all
            if len(distinct) <= SPARSE_MAX_CODES:
                codes = np.searchsorted(distinct, self.values).astype(code_dtype(len(distinct)))
                return SparseStat(rows, distinct, codes)
        return SparseStat(rows, self.values)

    def release(self) -> None:
        super().release()
        self.buffers, self.rows = None, None


@dataclasses.dataclass
class _MetadataRows:
    """Each event's row of the event metadata (``rows``, -1: none), and where each plane's events begin
    (``plane_first_event``, a row more than the planes): an event's metadata row is its own plane's, so the events
    that may take a metadata value are those of the planes whose metadata has one."""

    rows: np.ndarray
    metadata_plane: np.ndarray
    plane_first_event: np.ndarray

    @classmethod
    def of(cls, rows: np.ndarray, event_metadata: pd.DataFrame, headers: SpaceHeaders) -> _MetadataRows:
        per_plane = np.bincount(headers.line_plane.astype(np.int64), weights=headers.line_counts,
                                minlength=len(headers.planes)).astype(np.int64)
        return cls(rows, event_metadata["plane_id"].to_numpy(np.int64), np.concatenate(([0], np.cumsum(per_plane))))

    def chunks(self, valid: np.ndarray):
        """(first event, its events' metadata rows) of up to ``METADATA_FILL_CHUNK`` events at a time, over the
        events of the planes that have a metadata row ``valid`` marks (the planes' events are one run each)."""
        for plane in np.unique(self.metadata_plane[valid]).tolist():
            first, end = int(self.plane_first_event[plane]), int(self.plane_first_event[plane + 1])
            for low in range(first, end, METADATA_FILL_CHUNK):
                yield low, self.rows[low:min(low + METADATA_FILL_CHUNK, end)]


class _SparseTextSink(_SparseSink):
    """A text stat kept only at the events that carry it: each batch's rows and codes into ``categories`` appended as
    ``_SparseSink`` appends numbers (a later value of an event wins, a none too, as in a column), so no column of a
    code per event is written, nor scanned for its rows afterwards."""

    def __init__(self, kind: str, n_events: int):
        super().__init__(kind, n_events)
        self.number_dtype = np.dtype(np.int32)

    def put_codes(self, targets: np.ndarray, codes: np.ndarray) -> None:
        self._append(targets, codes, codes >= 0)  # -1: the event's value is none

    def fill_from_metadata(self, meta_series: pd.Series, meta_row: _MetadataRows) -> None:
        """Where an event has no own value, take its metadata's; the metadata's texts join the categories, in its
        order, where some event has a metadata value (as a column's fill adds them)."""
        import pandas as pd

        meta_values = [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v
                       for v in meta_series.tolist()]
        valid = np.asarray([v is not None for v in meta_values], dtype=bool)
        if not valid.any() or not len(meta_row.rows):
            return
        self._joined()
        new_rows, any_valid = self._taking(valid, meta_row)
        if any_valid:  # as a column's fill: the texts join once an event has a metadata value, its own or not
            codes = self._codes(meta_values)
            if len(new_rows):
                self._merge(new_rows, codes[meta_row.rows[new_rows]])

    def sparse(self, *, narrow: bool = False) -> SparseStat:
        self._joined()
        categories = np.array(list(self.categories), dtype=object)
        dtype = code_dtype(len(categories))
        if self.rows is None:
            return SparseStat(np.zeros(0, self.row_dtype), categories, np.zeros(0, dtype))
        return SparseStat(self.rows, categories, self.values.astype(dtype))

    def array(self, masks: _SharedMasks | None = None, *, narrow: bool = False):
        """The stat as a column after all (``_sparse_stats`` keeps a text stat on many events as one)."""
        self._joined()
        column = _ColumnSink(self.kind, self.n_events)
        column.categories = self.categories
        if self.rows is not None:
            column._allocate()
            column._hold(len(self.categories))
            column.values[self.rows] = self.values + 1
        return column.array(masks, narrow=narrow)


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


def _narrowest_holding(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """An integer stat's values in the narrowest type of its signedness that holds every present one."""
    if not present.any():
        return values
    info = np.iinfo(values.dtype)
    low = int(values.min(where=present, initial=info.max))
    high = int(values.max(where=present, initial=info.min))
    candidates = (np.uint8, np.uint16, np.uint32) if values.dtype == np.uint64 else (np.int8, np.int16, np.int32)
    for dtype in candidates:
        narrow = np.iinfo(dtype)
        if narrow.min <= low and high <= narrow.max:
            return values.astype(dtype)
    return values


def _narrowed(values: np.ndarray, narrowest: type = np.int32) -> np.ndarray:
    """int64 ids in the narrowest of ``narrowest``, int32 (ids are small counters), uint32 that holds every one;
    else as they are."""
    if not len(values):
        return values.astype(narrowest)
    low, high = int(values.min()), int(values.max())
    for dtype in dict.fromkeys((narrowest, np.int32, np.uint32)):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype, copy=False)  # the compiled decoder's int16 ids are kept as they are
    return values


def _categorical(labels: list[object], rows: np.ndarray) -> pd.Categorical:
    """A categorical of ``labels[rows]`` (row -1: missing) built from codes of the distinct labels."""
    import pandas as pd

    codes, categories = label_codes(labels)
    dtype = code_dtype(len(categories))
    if rows.dtype == dtype and np.array_equal(codes, np.arange(len(labels))) and (not len(rows) or rows.min() >= 0):
        codes = rows  # distinct labels: the codes are the rows themselves, one array for both columns
        codes.flags.writeable = False
    else:
        codes = np.append(codes, -1).astype(dtype)[rows]  # row -1 reads the appended -1
    return pd.Categorical.from_codes(codes, categories=categories, validate=False)


def _metadata_frame(rows: list[tuple], columns: dict[str, str]) -> pd.DataFrame:
    import pandas as pd

    base = pd.DataFrame([row[:4] for row in rows], columns=["plane_id", "metadata_id", "name", "display_name"])
    stat_records = [row[4] for row in rows]
    stat_names = sorted({name for record in stat_records for name in record})
    for name in stat_names:
        values = [record.get(name) for record in stat_records]
        kind = columns.get(name)
        if kind == "str":
            base[name] = pd.Series([None if v is None else as_text(v) for v in values], dtype=object)
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
