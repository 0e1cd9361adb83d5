"""The planes and events a load asks for by name (``LoadOptions.planes``, ``LoadOptions.events``), chosen before
the decoder sees them: other planes are skipped before their lines are read; in a chosen plane, each line is
kept with only the events of the asked-for metadata names (their ids read with numpy, the line written again
with them), so that a few events among millions cost the decode of a few.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any

import numpy as np

from tpudoctor.captures import wire
from tpudoctor.captures.schema import message_class
from tpudoctor.captures.xspace.event_wire import metadata_ids

_PADDING = bytes(wire.PAD_BYTES)


class Selection:
    """``planes`` and ``events`` names (None: all); ``__call__`` filters the planes of one pass. The
    decoder makes two passes (headers, then events): a plane's filtered lines are kept from the first
    pass for the second (only the chosen events' bytes), so each line is filtered once."""

    def __init__(self, planes: Collection[str] | None, events: Collection[str] | None):
        self.planes, self.events = planes, events
        self._lines: dict[int, list[bytes]] = {}

    def __call__(self, planes: Iterable[Any]) -> Iterable[Any]:
        if self.planes is None and self.events is None:
            return planes
        return self._chosen(planes)

    def _chosen(self, planes: Iterable[Any]) -> Iterator[Any]:
        for position, plane in enumerate(planes):
            if self.planes is not None and plane.name not in self.planes:
                continue
            if self.events is None:
                yield plane
                continue
            lines = self._lines.get(position)
            if lines is None:
                wanted = np.asarray(sorted(int(key) for key, metadata in plane.event_metadata.items()
                                           if metadata.name in self.events), dtype=np.int64)
                lines = self._lines[position] = [line_with_events(line, wanted) for line in plane.lines]
            yield _PlaneWithLines(plane, lines)


def line_with_events(line_bytes: bytes, wanted_ids: np.ndarray) -> bytes:
    """An XLine's bytes with only its events whose metadata id is one of ``wanted_ids`` (the line itself
    where it keeps them all); ``WireError`` where the line does not decode."""
    try:
        line = message_class("XLine", raw=True).FromString(line_bytes)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
        raise wire.WireError("a line does not decode") from exc
    events = list(line.events)
    if not events:
        return line_bytes
    lengths = np.fromiter(map(len, events), dtype=np.int64, count=len(events))
    ends = np.cumsum(lengths)
    buffer = wire.Buffer(b"".join([*events, _PADDING]), padded=True)
    keep = np.flatnonzero(np.isin(metadata_ids(buffer, ends - lengths, ends), wanted_ids))
    if len(keep) == len(events):
        return line_bytes
    del line.events[:]
    line.events.extend([events[index] for index in keep.tolist()])
    return line.SerializeToString()


class _PlaneWithLines:
    """A plane's header (ids, names, metadata, stats) with other lines in place of its own."""

    def __init__(self, plane, lines: list[bytes]):
        self.id, self.name, self.stats = plane.id, plane.name, plane.stats
        self.event_metadata, self.stat_metadata = plane.event_metadata, plane.stat_metadata
        self.lines = lines
