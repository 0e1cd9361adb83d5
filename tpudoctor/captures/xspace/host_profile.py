"""``HostProfile``: one host's capture as pandas tables (built by ``tables``), and its lookups."""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING

import numpy as np

from tpudoctor.captures.xspace.columns import EVENT_STAT_COLUMNS, LINE_COLUMNS
from tpudoctor.captures.xspace.lookup import RowLookup, code_dtype, run_of_rows

if TYPE_CHECKING:  # pandas is imported where a table is made: decoding runs while it imports
    import pandas as pd

    from tpudoctor.captures.xspace.selection import SelectedEvents


@dataclasses.dataclass
class HostProfile:
    """One host's capture as DataFrames. Times: ``*_ps`` picoseconds, ``*_ns`` nanoseconds.

    ``plane_id`` is the plane's position in the file (unique; the XPlane ``id`` field is not:
    host planes usually all have id 0 - it is kept as ``xplane_id``). ``events.start_ps`` is
    picoseconds since ``time_origin_ns`` (absolute picoseconds since the epoch overflow int64).

    The events are stored line after line, as many of each as ``lines.n_events`` counts: an event's line's own
    columns (``LINE_COLUMNS``: plane and line ids and names) are read through ``line_values`` / ``line_of``.
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
    selected_events: SelectedEvents | None = None
    """Where a load that left events out (``LoadOptions.lines`` / ``events``) found the ones it kept; None where
    every event of the decoded planes is in ``events``."""
    sparse_stats: dict[str, SparseStat] = dataclasses.field(default_factory=dict)
    """Stats kept only at the events that carry them instead of an ``events`` column (``stat_at``): asked
    for with ``LoadOptions.sparse_stats``, as the device ops' own stats, missing on most host events."""

    @functools.cached_property
    def line_first_rows(self) -> np.ndarray:
        """The first event row of each line of ``lines``, and one past the last event (int64, a row more than
        ``lines``); ``ValueError`` where the lines do not count the events."""
        counts = self.lines["n_events"].to_numpy(np.int64)
        if int(counts.sum()) != len(self.events):
            raise ValueError(f"the lines count {int(counts.sum())} events, the events table has {len(self.events)}")
        return np.concatenate(([0], np.cumsum(counts)))

    def line_of(self, rows: np.ndarray | slice | None = None) -> np.ndarray:
        """The row of ``lines`` of each event at ``rows`` (an array, a slice, or None: every event)."""
        first_rows = self.line_first_rows
        n_lines = len(first_rows) - 1
        if rows is None:
            return np.repeat(np.arange(n_lines, dtype=code_dtype(n_lines)), np.diff(first_rows))
        if isinstance(rows, slice):
            rows = np.arange(*rows.indices(len(self.events)))
        return run_of_rows(first_rows[1:], rows)

    def line_values(self, name: str, rows: np.ndarray | slice | None = None):
        """Column ``name`` of ``LINE_COLUMNS`` at event ``rows`` (every event: None): ``plane_id`` and
        ``line_id`` as int64 numpy arrays, ``plane_name`` and ``line_name`` as categoricals whose categories are
        the distinct names in the order of the planes or lines."""
        import pandas as pd

        values = self._line_table(name)
        line = self.line_of(rows)
        if isinstance(values, tuple):
            codes, categories = values
            return pd.Categorical.from_codes(codes[line], categories=categories, validate=False)
        return values[line]

    def line_ids(self, rows: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        """(plane_id, line_id) of the events at ``rows`` as int64 arrays: ``line_values`` of both, their lines
        found once."""
        line = self.line_of(rows)
        return self._line_table("plane_id")[line], self._line_table("line_id")[line]

    def with_line_columns(self, frame: pd.DataFrame | None = None) -> pd.DataFrame:
        """``frame`` (events of this host, by their index: rows of ``events``; every event: None) with their
        line's columns (``LINE_COLUMNS``) in front, each event's: a table for a reader that wants them per
        event, at the memory that costs."""
        import pandas as pd

        frame = self.events if frame is None else frame
        rows = frame.index.to_numpy()
        line_columns = {name: self.line_values(name, rows) for name in LINE_COLUMNS}
        return pd.concat([pd.DataFrame(line_columns, index=frame.index), frame], axis=1)

    def on_lines(self, line_hit: np.ndarray) -> np.ndarray:
        """A bool per event: whether its line is one ``line_hit`` (a bool per row of ``lines``) marks."""
        return np.repeat(np.asarray(line_hit, bool), np.diff(self.line_first_rows))

    def line_codes(self, name: str) -> tuple[np.ndarray, pd.Index]:
        """(code per row of ``lines``, categories) of ``plane_name`` or ``line_name``: what ``line_values`` gathers."""
        values = self._line_table(name)
        if not isinstance(values, tuple):
            raise ValueError(f"{name} is not a name column of the lines")
        return values

    def _line_table(self, name: str):
        """A line column, one value per row of ``lines``, made once: int64 ids, or (codes, categories) of names."""
        made = self.__dict__.setdefault("_line_tables", {})
        if name not in made:
            lines = self.lines
            if name in ("plane_id", "line_id"):
                made[name] = lines[name].to_numpy(np.int64)
            elif name == "line_name":
                made[name] = label_codes(lines["line_name"].tolist())
            elif name == "plane_name":
                plane_ids = self.planes["plane_id"].to_numpy(np.int64)
                codes, categories = label_codes(self.planes["plane_name"].tolist())
                code_of_plane = np.full(int(plane_ids.max()) + 2 if len(plane_ids) else 1, -1, codes.dtype)
                code_of_plane[plane_ids] = codes
                made[name] = (code_of_plane[lines["plane_id"].to_numpy(np.int64)], categories)
            else:
                raise KeyError(f"{name} is not one of {LINE_COLUMNS}")
        return made[name]

    def has_stat(self, name: str) -> bool:
        """Whether ``stat_at`` reads ``name`` (an events column, a metadata stat or a sparse stat)."""
        return name in self.events.columns or name in self.sparse_stats or name in self.metadata_stats

    def stat_at(self, name: str, rows: np.ndarray | slice):
        """Stat ``name`` at event ``rows`` (an array, or a slice of adjacent rows) as a pandas array: the
        events' column, for a stat of ``sparse_stats`` the values of the rows that carry one, or for a
        stat of ``metadata_stats`` each event's metadata value; None where the capture has no such stat."""
        if isinstance(rows, slice):
            if name in self.events.columns:
                return self.events[name].array[rows]
            rows = np.arange(*rows.indices(len(self.events)))
        if name in self.events.columns:
            return self.events[name].array.take(rows)
        if name in self.sparse_stats:
            return self.sparse_stats[name].at(rows)
        if name not in self.metadata_stats:
            return None
        return self.metadata_stat(name).take(self.metadata_rows_at(rows), allow_fill=True)

    def metadata_rows_at(self, rows: np.ndarray) -> np.ndarray:
        """The ``event_metadata`` row (int32, -1: none) of the events at ``rows``: where ``stat_at`` reads a
        metadata stat, so that a reader of several takes each one's values at these rows (``metadata_stat``)."""
        plane = self.line_values("plane_id", rows)
        metadata_id = self.events["metadata_id"].to_numpy()[rows].astype(np.int64)
        return self._metadata_rows.lookup(plane, metadata_id)

    def rows_with(self, name: str) -> np.ndarray:
        """The rows (ascending) of the events with a value of stat ``name`` in its ``events`` column or
        ``sparse_stats`` (none for a stat of ``metadata_stats``): a sparse stat's own rows, no scan."""
        if name in self.sparse_stats:
            return self.sparse_stats[name].rows
        if name in self.events.columns:
            return np.flatnonzero(self.events[name].notna().to_numpy())
        return np.zeros(0, np.int64)

    @functools.cached_property
    def _metadata_rows(self) -> RowLookup:
        """The row lookup of ``event_metadata``, built once (analyses read the stats a chunk at a time)."""
        return metadata_row_lookup(self.event_metadata)

    def metadata_stat(self, name: str) -> pd.arrays.IntegerArray:
        """A stat of ``metadata_stats`` as nullable integers, one per ``event_metadata`` row, converted once per
        host."""
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
        first_rows = self.line_first_rows
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


MARKED_SPAN = 8  # rows asked for at once spanning up to this many events each are found by marks, not searches


@dataclasses.dataclass(frozen=True)
class SparseStat:
    """A stat kept only at the events that carry it: ``rows``, their ascending rows in ``events``, and
    their values: ``values`` itself, or ``values[codes]`` for a stat of few distinct values (program
    ids: three distinct 64-bit hashes over millions of ops) and for a text stat (``values``: its
    categories, as its column's; ``is_text``)."""

    rows: np.ndarray
    values: np.ndarray
    codes: np.ndarray | None = None

    def __post_init__(self) -> None:
        for array in (self.rows, self.values, self.codes):  # shared with readers (the device ops' rows, times)
            if array is not None:
                array.flags.writeable = False

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def is_text(self) -> bool:
        return self.values.dtype == object

    def at(self, rows: np.ndarray):
        """The stat at event ``rows`` as its column's ``take`` gives it: a nullable integer array, or a
        categorical of a text stat."""
        import pandas as pd

        if not len(self.rows) and not self.is_text:
            return pd.arrays.IntegerArray(np.zeros(len(rows), self.values.dtype), np.ones(len(rows), bool))
        if self.is_text:
            return pd.Categorical.from_codes(self.codes_at(rows), categories=pd.Index(self.values, dtype=object),
                                             validate=False)
        position, found = self._positions(np.asarray(rows))
        if found is None:  # every row carries it
            values = self.values[position].copy() if self.codes is None else self.values[self.codes[position]]
            return pd.arrays.IntegerArray(values, np.zeros(len(values), bool))
        values = self.values[position] if self.codes is None else self.values[self.codes[position]]
        values[~found] = 0
        return pd.arrays.IntegerArray(values, ~found)

    def codes_at(self, rows: np.ndarray) -> np.ndarray:
        """The codes of a coded stat at event ``rows`` (-1: the event has none)."""
        if not len(self.rows):
            return np.full(len(rows), -1, self.codes.dtype)
        position, found = self._positions(np.asarray(rows))
        codes = self.codes[position]
        if found is None:
            return codes.copy()
        return np.where(found, codes, np.asarray(-1, codes.dtype))

    def codes_between(self, low: int, high: int) -> np.ndarray:
        """The codes of a coded stat at the events ``low:high`` (-1: none): its rows there, scattered."""
        out = np.full(high - low, -1, self.codes.dtype)
        first, last = self.rows.searchsorted(np.array([low, high], self.rows.dtype))
        out[self.rows[first:last] - low] = self.codes[first:last]
        return out

    def _positions(self, rows: np.ndarray) -> tuple[np.ndarray | slice, np.ndarray | None]:
        """(position in ``rows``/``values`` of each of ``rows``, whether found there; None: all found)."""
        if len(rows) == len(self.rows) and (rows is self.rows or np.array_equal(rows, self.rows)):
            return slice(None), None
        if not len(rows):
            return np.zeros(0, np.int64), np.zeros(0, bool)
        first, last = int(rows[0]), int(rows[-1])
        if last - first == len(rows) - 1:  # maybe adjacent rows that all carry the stat (a TPU op line's)
            low, high = self.rows.searchsorted(np.array([first, last], self.rows.dtype))
            if (high - low == last - first and high < len(self.rows) and self.rows[low] == first
                    and self.rows[high] == last and np.all(rows[1:] > rows[:-1])):
                return slice(low, high + 1), None
        if last - first < MARKED_SPAN * len(rows) and np.all(rows[1:] >= rows[:-1]):
            return self._marked_positions(rows, first, last)
        position = np.searchsorted(self.rows, rows.astype(self.rows.dtype, copy=False))
        np.minimum(position, len(self.rows) - 1, out=position)
        return position, self.rows[position] == rows

    def _marked_positions(self, rows: np.ndarray, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
        """``_positions`` of ascending ``rows`` over a short span of events: the stat's rows in it marked
        and counted (a running sum), where a binary search per row costs several times more."""
        low, high = self.rows.searchsorted(np.array([first, last + 1], self.rows.dtype))
        marks = np.zeros(last - first + 1, bool)
        marks[self.rows[low:high] - first] = True
        offset = rows - first
        found = marks[offset]
        position = np.cumsum(marks, dtype=np.int64)[offset]
        position += low - 1  # the count of marked rows up to and including each row, less one
        np.maximum(position, 0, out=position)
        return position, found


def label_codes(labels: list[object]) -> tuple[np.ndarray, pd.Index]:
    """Category codes (-1 for None; in the narrowest type) and categories (the distinct labels in order) of a short list."""
    import pandas as pd

    index: dict[object, int] = {}
    codes = np.fromiter((-1 if v is None else index.setdefault(v, len(index)) for v in labels), np.int32, len(labels))
    return codes.astype(code_dtype(len(index))), pd.Index(list(index), dtype=object)  # as pandas types them


def metadata_row_lookup(event_metadata: pd.DataFrame) -> RowLookup:
    """The row lookup of ``event_metadata`` (rows by plane, ids sorted within a plane, as decoded)."""
    plane = event_metadata["plane_id"].to_numpy(np.int64)
    ids = event_metadata["metadata_id"].to_numpy(np.int64)
    n_planes = int(plane.max()) + 1 if len(plane) else 0
    bounds = np.searchsorted(plane, np.arange(n_planes + 1))
    return RowLookup([ids[bounds[p]:bounds[p + 1]] for p in range(n_planes)], bounds[:-1].tolist())


def numbers_of(values: pd.Series, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """(numbers, valid) of a metadata stat column: each value as ``dtype`` (``to_number``)."""
    converted = [to_number(v, dtype) for v in values.tolist()]
    valid = np.asarray([v is not None for v in converted], dtype=bool)
    numbers = np.zeros(len(converted), dtype=dtype)
    if valid.any():
        numbers[valid] = [v for v in converted if v is not None]
    return numbers, valid


def _metadata_numbers(values: pd.Series, kind: str) -> pd.arrays.IntegerArray:
    """A metadata stat column as a nullable integer array, converted as an event column's is."""
    import pandas as pd

    numbers, valid = numbers_of(values, np.uint64 if kind == "uint" else np.int64)
    return pd.arrays.IntegerArray(numbers, ~valid)


def as_text(value: object) -> str:
    """A stat value as text (bytes decoded as UTF-8)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value if isinstance(value, str) else str(value)


def to_number(value: object, dtype: type) -> int | float | None:
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

