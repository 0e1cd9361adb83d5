"""The planes, lines and events a load asks for (``LoadOptions.planes``, ``.lines``, ``.events``), chosen before
the decoder sees them: other planes are skipped before their lines are read; in a chosen plane, a line named in
``lines`` keeps all its events, any other only the events of the asked-for metadata names (their ids read with
numpy, the line written again with them; none where ``events`` is None but ``lines`` is not), so that a few events
among millions cost the decode of a few. Every line of a chosen plane keeps its header (a row of
``HostProfile.lines``), with the events it kept; ``SelectedEvents`` says where those were in the file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Iterator
from typing import Any

import numpy as np

from tpudoctor.captures import wire
from tpudoctor.captures.schema import message_class
from tpudoctor.captures.xspace.event_wire import metadata_ids

_PADDING = bytes(wire.PAD_BYTES)
CHUNK_EVENTS = 1 << 14  # a line's events filtered this many at a time: bounds the bytes objects held at once


@dataclasses.dataclass
class SelectedEvents:
    """Where the events a selection kept were in the file, for a reader that counts positions as a whole decode
    would: ``line_events_in_file`` per row of ``HostProfile.lines`` (the events the line has in the file),
    ``position_in_line`` per row of ``HostProfile.events`` (its index among its line's events in the file)."""

    line_events_in_file: np.ndarray
    position_in_line: np.ndarray


class Selection:
    """``planes``, ``lines`` and ``events`` names (None: all); ``__call__`` filters the planes of one pass.

    ``lines_fallback_stats``: until a line named in ``lines`` is met (in file order), every line of a plane whose
    stat metadata names all of these stats keeps all its events too, so that a reader falling back on those
    events where a capture has no such line (memory's program runs on JAX's CPU captures) finds them whole.

    The decoder makes two passes (headers, then events): the first pass's filtered planes are kept for the
    second (only the chosen events' bytes), so each line is read and filtered once."""

    def __init__(self, planes: Collection[str] | None, events: Collection[str] | None,
                 lines: Collection[str] | None = None, lines_fallback_stats: Collection[str] = ()):
        self.planes, self.events, self.lines = planes, events, lines
        self.lines_fallback_stats = frozenset(lines_fallback_stats)
        self._second_pass: list[_LinesOf] | None = None
        self._counts: list[int] = []
        self._positions: list[np.ndarray] = []

    @property
    def filters_events(self) -> bool:
        return self.events is not None or self.lines is not None

    def __call__(self, planes: Iterable[Any]) -> Iterable[Any]:
        if not self.filters_events:
            return planes if self.planes is None else (plane for plane in planes if plane.name in self.planes)
        if self._second_pass is not None:  # what the first pass kept, nothing read again; then let go
            kept, self._second_pass = self._second_pass, []
            return iter(kept)
        return self._first_pass(planes)

    def selected_events(self) -> SelectedEvents | None:
        """Where the kept events were in the file (after both passes); None where no event was left out."""
        if not self.filters_events:
            return None
        positions = np.concatenate(self._positions) if self._positions else np.zeros(0, dtype=np.int64)
        return SelectedEvents(np.asarray(self._counts, dtype=np.int64), positions)

    def _first_pass(self, planes: Iterable[Any]) -> Iterator[Any]:
        kept_lines: list[_LinesOf] = []
        line_names = frozenset(self.lines or ())
        named_line_met = False
        for plane in planes:
            if self.planes is not None and plane.name not in self.planes:
                continue
            event_names = self.events or ()
            wanted = np.asarray(sorted(int(key) for key, metadata in plane.event_metadata.items()
                                       if metadata.name in event_names), dtype=np.int64)
            stat_names = {metadata.name for metadata in plane.stat_metadata.values()}
            fallback = bool(self.lines_fallback_stats) and self.lines_fallback_stats <= stat_names
            lines = []
            for line_bytes in plane.lines:
                line = _parse_line(line_bytes)
                whole = line.name in line_names
                named_line_met = named_line_met or whole
                self._counts.append(len(line.events))  # before _line_kept leaves out the others
                kept, positions = _line_kept(line, line_bytes, wanted, whole or (fallback and not named_line_met))
                lines.append(kept)
                self._positions.append(positions)
                del line
            kept_lines.append(_LinesOf(plane, lines))
            yield _PlaneWithLines(plane, lines)
        self._second_pass = kept_lines


def _parse_line(line_bytes: bytes):
    try:
        return message_class("XLine", raw=True).FromString(line_bytes)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
        raise wire.WireError("a line does not decode") from exc


def _line_kept(line, line_bytes: bytes, wanted_ids: np.ndarray, whole: bool) -> tuple[bytes, np.ndarray]:
    """(the line's bytes with only its kept events, their positions among the line's events): all of them where
    ``whole``, else those whose metadata id is one of ``wanted_ids``. The events are read ``CHUNK_EVENTS`` at a
    time: a line of a million events is never held as a million bytes objects."""
    count = len(line.events)
    if whole or not count:
        return line_bytes, np.arange(count, dtype=np.int64)
    kept_events: list[bytes] = []
    kept_positions: list[np.ndarray] = []
    if len(wanted_ids):
        for first in range(0, count, CHUNK_EVENTS):
            events = line.events[first:first + CHUNK_EVENTS]
            lengths = np.fromiter(map(len, events), dtype=np.int64, count=len(events))
            ends = np.cumsum(lengths)
            buffer = wire.Buffer(b"".join([*events, _PADDING]), padded=True)
            keep = np.flatnonzero(np.isin(metadata_ids(buffer, ends - lengths, ends), wanted_ids))
            kept_events.extend(events[index] for index in keep.tolist())
            kept_positions.append(keep.astype(np.int64) + first)
            del events, buffer
    keep = np.concatenate(kept_positions) if kept_positions else np.zeros(0, dtype=np.int64)
    if len(keep) == count:
        return line_bytes, keep
    del line.events[:]
    line.events.extend(kept_events)
    return line.SerializeToString(), keep


class _LinesOf:
    """A plane's kept lines for the decoder's second pass, without its header: the first pass's parse (and, for
    bytes, the whole file's parse it belongs to) is not held by them."""

    def __init__(self, plane, lines: list[bytes]):
        self.id, self.name, self.lines = plane.id, plane.name, lines


class _PlaneWithLines:
    """A plane's header (ids, names, metadata, stats) with other lines in place of its own."""

    def __init__(self, plane, lines: list[bytes]):
        self.id, self.name, self.stats = plane.id, plane.name, plane.stats
        self.event_metadata, self.stat_metadata = plane.event_metadata, plane.stat_metadata
        self.lines = lines
