"""What ``tpudoctor memory`` needs of an XSpace capture, read in one pass: ``read_memory_capture``.

    from tpudoctor.captures.memory_capture import read_memory_capture
    capture = read_memory_capture("host.xplane.pb")
    capture.events        # the allocators' memory events (``memory_events.MemoryEvents``)
    capture.hlo_protos    # each program's serialized ``HloProto`` on /host:metadata (its buffer plan)
    capture.runs          # when each program ran (``ProgramRun``)

The file is opened and read once (a file of ``STREAM_MIN_BYTES`` or more plane by plane, as
``read_memory_events`` reads it); each plane is visited once, its lines read once: the first host plane's lines
feed the memory events and the program runs together. Where the programs cannot be read (a malformed line
outside the memory events), ``program_error`` says so and the events still stand.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tpudoctor.captures import wire
from tpudoctor.captures.memory_events import (
    HOST_PLANE,
    STREAM_MIN_BYTES,
    MemoryEvents,
    empty_memory_events,
    plane_memory_events,
)
from tpudoctor.captures.schema import message_class
from tpudoctor.errors import InputError

HLO_PROTO_STAT = "Hlo Proto"
PROGRAM_ID_STAT = "program_id"
RUN_ID_STAT = "run_id"
METADATA_PLANE = "/host:metadata"
MODULES_LINE = "XLA Modules"

_EVENT_NAME = re.compile(r"^(?P<name>.*?)\((?P<id>\d+)\)$")


def split_event_name(name: str) -> tuple[str, int | None]:
    """``jit_f(6)`` -> (``jit_f``, 6); a name without the id -> (name, None)."""
    match = _EVENT_NAME.match(name)
    return (match["name"], int(match["id"])) if match else (name, None)


@dataclasses.dataclass(frozen=True)
class HloProtoBytes:
    """One program's serialized ``xla.HloProto`` from the ``/host:metadata`` plane, with its event name
    (``jit_f(6)``) and program id (the ``program_id`` stat, else the id in the name)."""

    event_name: str
    program_id: int | None
    data: bytes


@dataclasses.dataclass(frozen=True)
class ProgramRun:
    """One run of a program in the capture: where (plane, line), which program, when (ps since the epoch)."""

    plane: str
    line: str
    name: str
    program_id: int | None
    start_ps: int
    end_ps: int


@dataclasses.dataclass
class MemoryCapture:
    events: MemoryEvents
    hlo_protos: list[HloProtoBytes]
    runs: list[ProgramRun]
    program_error: str | None = None


def read_memory_capture(path: str | os.PathLike, *, source: str | None = None) -> MemoryCapture:
    """The memory events, the programs' HloProtos and their runs of a local ``.xplane.pb``, in one read;
    ``InputError`` where it is not a readable XSpace. One plane is held at a time; a file of ``STREAM_MIN_BYTES``
    or more holds one line of it at a time (its lines left on disk until read)."""
    from tpudoctor.captures.validate import check_bytes
    from tpudoctor.captures.xspace.planes_on_disk import layout, planes_on_disk

    path = os.fspath(path)
    source = source or path
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        head = handle.read(1 << 20)
        check_bytes(head, source)
        found = layout(handle, size)
        if found is not None:
            spans, _errors, warnings = found
            if size >= STREAM_MIN_BYTES:
                return _one_pass(lambda: planes_on_disk(path, source, spans), source, warnings)
            names: list[str] = []
            capture = _one_pass(lambda: _planes_read(handle, head, spans, source, names), source, warnings)
            if not any(names):
                raise _no_named_planes(source)
            return capture
        handle.seek(0)  # not a clean XSpace layout: the whole-file path says what is wrong
        data = handle.read()
    return memory_capture_from_bytes(data, source=source)


def _planes_read(handle, head: bytes, spans: list[tuple[int, int]], source: str, names: list[str]
                 ) -> Iterator[Any]:
    """Each plane at (offset, length) of an open file, read and parsed in turn (its lines as bytes); a plane
    within ``head`` (the file's first bytes, already read) is not read again."""
    plane_class: Any = message_class("XPlane", raw=True)
    for start, length in spans:
        if start + length <= len(head):
            data = head[start:start + length]
        else:
            handle.seek(start)
            data = handle.read(length)
        try:
            plane = plane_class.FromString(data)
        except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
            raise InputError(f"{source} is a corrupt XSpace profile: the plane at byte {start:,} does not decode",
                             hint="the file was damaged after it was written; copy it again as binary or "
                                  "recapture") from exc
        del data
        names.append(plane.name)
        yield plane
        del plane


def memory_capture_from_bytes(data: bytes, *, source: str) -> MemoryCapture:
    """``read_memory_capture`` for a serialized XSpace held in memory."""
    from tpudoctor.captures.validate import check_bytes, explain_parse_failure

    check_bytes(data, source)
    try:
        space_class: Any = message_class("XSpace", raw=True)
        space = space_class.FromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
        raise explain_parse_failure(data, source) from exc
    del data
    if not any(plane.name for plane in space.planes):
        raise _no_named_planes(source)
    return _one_pass(lambda: space.planes, source, list(space.warnings))


def _no_named_planes(source: str) -> InputError:
    return InputError(f"{source} is not an XSpace profile: it decodes to no named planes",
                      hint="pass a <host>.xplane.pb written by the TensorFlow/JAX profiler")


def _one_pass(planes: Callable[[], Iterable[Any]], source: str, warnings: list[str]) -> MemoryCapture:
    programs = _Programs()
    events: MemoryEvents | None = None
    try:
        for plane in planes():
            programs.plane(plane)
            if events is None and plane.name == HOST_PLANE:
                lines = _TappedLines(plane.lines, programs.line)
                events = plane_memory_events(_WithLines(plane, lines), source, warnings)
                if not lines.read:  # no memory event metadata: the lines are read for the runs alone
                    for _ in lines:
                        pass
            else:
                for raw_line in plane.lines:
                    programs.line(raw_line)
    except wire.WireError as exc:
        raise InputError(f"{source} is corrupt: {exc}",
                         hint="the file was damaged after it was written; capture again") from exc
    if events is None:
        events = empty_memory_events(source, has_host_plane=False, warnings=list(warnings))
    return MemoryCapture(events, programs.hlo_protos, programs.runs(), programs.error)


class _TappedLines:
    """A plane's lines that hand each line to ``tap`` as they are read (the one read of the host plane)."""

    def __init__(self, lines: Iterable[bytes], tap: Callable[[bytes], None]):
        self._lines, self._tap, self.read = lines, tap, False

    def __len__(self) -> int:
        return len(self._lines)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[bytes]:
        self.read = True
        for raw_line in self._lines:
            self._tap(raw_line)
            yield raw_line


class _WithLines:
    """A plane with its lines replaced (the rest passed through)."""

    def __init__(self, plane: Any, lines: _TappedLines):
        self._plane, self.lines = plane, lines

    def __getattr__(self, name: str) -> Any:
        return getattr(self._plane, name)


def _stat_value(stat) -> Any:
    which = stat.WhichOneof("value")
    return getattr(stat, which) if which else None


class _Programs:
    """The programs' HloProtos (``/host:metadata``) and runs: the events of each plane's ``XLA Modules`` line;
    where no plane has one (JAX on CPU), one run per (line, program_id, run_id) spanning the op events that carry
    them. A failure stops the collection and is kept in ``error``; it never stops the memory events."""

    def __init__(self):
        self.hlo_protos: list[HloProtoBytes] = []
        self.error: str | None = None
        self._line_class, self._event_class = message_class("XLine", raw=True), message_class("XEvent")
        self._runs: list[ProgramRun] = []
        self._op_spans: dict[tuple[str, str, int, Any], list[int]] = {}
        self._plane: Any = None
        self._op_spans_possible = False

    def plane(self, plane: Any) -> None:
        if self.error is not None:
            return
        try:
            stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
            self._plane = (plane.name, stat_names, {k: v.name for k, v in plane.event_metadata.items()},
                           {k: {stat_names.get(s.metadata_id): _stat_value(s) for s in v.stats}
                            for k, v in plane.event_metadata.items() if v.stats})
            # an op event spans a run only with both stats, which a plane without either name cannot hold
            self._op_spans_possible = {PROGRAM_ID_STAT, RUN_ID_STAT} <= set(stat_names.values())
            if plane.name == METADATA_PLANE:
                self._hlo_protos(plane, stat_names)
        except Exception as exc:  # noqa: BLE001 - any decode failure is the programs' note, not the run's end
            self.error = f"the capture's programs could not be read: {exc}"

    def _hlo_protos(self, plane: Any, stat_names: dict[int, str]) -> None:
        for metadata in plane.event_metadata.values():
            stats = {stat_names.get(s.metadata_id, ""): s for s in metadata.stats}
            hlo = stats.get(HLO_PROTO_STAT)
            if hlo is None or not hlo.bytes_value:
                continue
            program_id = _stat_value(stats[PROGRAM_ID_STAT]) if PROGRAM_ID_STAT in stats else None
            if program_id is None:
                program_id = split_event_name(metadata.name)[1]
            self.hlo_protos.append(HloProtoBytes(metadata.name, program_id, hlo.bytes_value))

    def line(self, raw_line: bytes) -> None:
        if self.error is not None:
            return
        try:
            self._line(raw_line)
        except Exception as exc:  # noqa: BLE001 - as in plane()
            self.error = f"the capture's programs could not be read: {exc}"

    def _line(self, raw_line: bytes) -> None:
        plane_name, stat_names, metadata_names, metadata_stats = self._plane
        line = self._line_class.FromString(raw_line)
        base_ps = line.timestamp_ns * 1000
        is_modules = line.name == MODULES_LINE
        if not is_modules and (self._runs or not self._op_spans_possible):
            return  # op spans count only where no plane has a modules line, and need both stats
        for raw_event in line.events:
            event = self._event_class.FromString(raw_event)
            stats = dict(metadata_stats.get(event.metadata_id, {}))
            stats.update({stat_names.get(s.metadata_id): _stat_value(s) for s in event.stats})
            start = base_ps + event.offset_ps
            name = metadata_names.get(event.metadata_id, "")
            if is_modules:
                program_id = stats.get(PROGRAM_ID_STAT)
                program_id = split_event_name(name)[1] if program_id is None else int(program_id)
                self._runs.append(ProgramRun(plane_name, line.name, name, program_id, start,
                                             start + event.duration_ps))
            elif PROGRAM_ID_STAT in stats and RUN_ID_STAT in stats:
                key = (plane_name, line.name, int(stats[PROGRAM_ID_STAT]), stats[RUN_ID_STAT])
                span = self._op_spans.setdefault(key, [start, start + event.duration_ps])
                span[0], span[1] = min(span[0], start), max(span[1], start + event.duration_ps)

    def runs(self) -> list[ProgramRun]:
        if self.error is not None:
            return []
        runs = self._runs or [ProgramRun(plane, line, "", program_id, span[0], span[1])
                              for (plane, line, program_id, _), span in self._op_spans.items()]
        return sorted(runs, key=lambda r: (r.start_ps, r.plane))
