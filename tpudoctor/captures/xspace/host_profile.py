"""``HostProfile``: one host's capture as pandas tables (built by ``tables``), and its lookups."""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING

import numpy as np

from tpudoctor.captures.xspace.columns import EVENT_STAT_COLUMNS
from tpudoctor.captures.xspace.lookup import RowLookup

if TYPE_CHECKING:  # pandas is imported where a table is made: decoding runs while it imports
    import pandas as pd

    from tpudoctor.captures.xspace.selection import SelectedEvents


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
    selected_events: SelectedEvents | None = None
    """Where a load that left events out (``LoadOptions.lines`` / ``events``) found the ones it kept; None where
    every event of the decoded planes is in ``events``."""

    def stat_at(self, name: str, rows: np.ndarray):
        """Stat ``name`` at event ``rows`` as a pandas array: the events' column, or for a stat of
        ``metadata_stats`` each event's metadata value; None where the capture has no such stat."""
        if name in self.events.columns:
            return self.events[name].array.take(rows)
        if name not in self.metadata_stats:
            return None
        return self.metadata_stat(name).take(self.metadata_rows_at(rows), allow_fill=True)

    def metadata_rows_at(self, rows: np.ndarray) -> np.ndarray:
        """The ``event_metadata`` row (int32, -1: none) of the events at ``rows``: where ``stat_at`` reads a
        metadata stat, so that a reader of several takes each one's values at these rows (``metadata_stat``)."""
        plane = self.events["plane_id"].to_numpy()[rows]
        metadata_id = self.events["metadata_id"].to_numpy()[rows].astype(np.int64)
        return self._metadata_rows.lookup(plane, metadata_id)

    def metadata_stat(self, name: str) -> pd.arrays.IntegerArray:
        """A stat of ``metadata_stats``, one value per ``event_metadata`` row (nullable integers)."""
        return self._metadata_values(name)

    @functools.cached_property
    def _metadata_rows(self) -> RowLookup:
        """The row lookup of ``event_metadata``, built once (analyses read the stats a chunk at a time)."""
        return metadata_row_lookup(self.event_metadata)

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

