"""What ``tpudoctor memory`` needs of an XSpace capture, read in one pass: ``read_memory_capture``.

    from tpudoctor.captures.memory_capture import read_memory_capture
    capture = read_memory_capture("host.xplane.pb")
    capture.events        # the allocators' memory events (``memory_events.MemoryEvents``)
    capture.hlo_protos    # each program's serialized ``HloProto`` on /host:metadata (its buffer plan)
    capture.runs          # when each program ran (``ProgramRun``)

The capture is decoded once by the profile's columnar decoder (``captures.xspace``: the file opened once and each
of its bytes read once; from ``STREAM_MIN_BYTES`` plane by plane and line by line), with only the events these need
(``capture_load_options``: the other events are dropped from their lines before they are decoded), and the three are
taken from its tables: the memory events from the first host plane, the HloProtos from ``/host:metadata``'s event
metadata, the runs from the ``XLA Modules`` lines.
Where the programs cannot be made out of the tables, ``program_error`` says so and the events still stand.
"""

from __future__ import annotations

import dataclasses
import os
import re

import numpy as np
import pandas as pd

from tpudoctor.captures.memory_events import (
    ALLOCATION,
    DEALLOCATION,
    MEMORY_STATS,
    MemoryEvents,
    memory_events_of,
    with_columns,
)
from tpudoctor.captures.xspace.host_profile import HostProfile

HLO_PROTO_STAT = "Hlo Proto"
PROGRAM_ID_STAT = "program_id"
RUN_ID_STAT = "run_id"
METADATA_PLANE = "/host:metadata"
MODULES_LINE = "XLA Modules"
# the stats decoded into columns: the memory events' and the programs' ids
CAPTURE_STATS: dict[str, str] = {**MEMORY_STATS, PROGRAM_ID_STAT: "uint", RUN_ID_STAT: "int"}

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
    """The memory events, the programs' HloProtos and their runs of a local ``.xplane.pb``, from one decode;
    ``InputError`` where it is not a readable XSpace."""
    from tpudoctor.captures.xspace import decode_host_file

    path = os.fspath(path)
    source = source or path
    return memory_capture_of(decode_host_file(path, hostname="", source=source, options=capture_load_options()),
                             source)


def memory_capture_from_bytes(data: bytes, *, source: str) -> MemoryCapture:
    """``read_memory_capture`` for a serialized XSpace held in memory."""
    from tpudoctor.captures.xspace import decode_host

    return memory_capture_of(decode_host(data, hostname="", source=source, options=capture_load_options()), source)


def capture_load_options():
    """What the decoder reads for memory (``LoadOptions``): the allocators' events wherever they are, every event of
    the ``XLA Modules`` lines (the runs), and where a capture has none of those lines, the lines of planes whose
    events can carry both program_id and run_id (``_runs``' fallback); the event metadata with the HloProtos
    whole. Every other event (the ops, most of a capture) is left out before it is decoded."""
    from tpudoctor.captures.xspace import LoadOptions

    return LoadOptions(stats=dict(CAPTURE_STATS), whole_bytes_stats={HLO_PROTO_STAT},
                       events=frozenset([ALLOCATION, DEALLOCATION]), lines=frozenset([MODULES_LINE]),
                       lines_fallback_stats=frozenset([PROGRAM_ID_STAT, RUN_ID_STAT]))


def memory_capture_of(host: HostProfile, source: str) -> MemoryCapture:
    """The memory events, HloProtos and runs of a capture decoded with ``CAPTURE_STATS`` among its stats."""
    with_columns(host, CAPTURE_STATS)
    events = memory_events_of(host, source)
    try:
        return MemoryCapture(events, _hlo_protos(host), _runs(host))
    except Exception as exc:  # noqa: BLE001 - any failure is the programs' note, not the run's end
        return MemoryCapture(events, [], [], f"the capture's programs could not be read: {exc}")


def _hlo_protos(host: HostProfile) -> list[HloProtoBytes]:
    metadata = host.event_metadata
    if HLO_PROTO_STAT not in metadata.columns:
        return []
    plane_ids = host.planes.loc[host.planes["plane_name"] == METADATA_PLANE, "plane_id"].tolist()
    rows = metadata[metadata["plane_id"].isin(plane_ids)]
    program_ids = rows[PROGRAM_ID_STAT].tolist() if PROGRAM_ID_STAT in rows.columns else [None] * len(rows)
    protos = []
    for name, data, program_id in zip(rows["name"].tolist(), rows[HLO_PROTO_STAT].tolist(), program_ids,
                                      strict=True):
        if not isinstance(data, bytes) or not data:
            continue
        if program_id is None or (isinstance(program_id, float) and np.isnan(program_id)):
            program_id = split_event_name(name)[1]
        protos.append(HloProtoBytes(name, program_id, data))
    return protos


def _runs(host: HostProfile) -> list[ProgramRun]:
    """The events of each plane's ``XLA Modules`` line; where no plane has one (JAX on CPU), one run per (plane,
    line, program_id, run_id) spanning the events that carry both, in the order they first occur."""
    events, lines = host.events, host.lines
    if not len(events):
        return []
    line_row = host.line_of()
    line_names = lines["line_name"].to_numpy(dtype=object)
    plane_names = dict(zip(host.planes["plane_id"].tolist(), host.planes["plane_name"].tolist(), strict=True))
    origin_ps = host.time_origin_ns * 1000
    modules = np.flatnonzero(line_names[line_row] == MODULES_LINE)
    if len(modules):
        chosen = events.iloc[modules]
        program_ids = chosen[PROGRAM_ID_STAT].astype(object).tolist()
        id_in_name = {name: split_event_name(name)[1] for name in chosen["name"].unique().tolist()}
        plane_of = [plane_names[plane] for plane in host.line_values("plane_id", modules).tolist()]
        starts = (chosen["start_ps"].to_numpy(np.int64)).tolist()
        ends = (chosen["start_ps"].to_numpy(np.int64) + chosen["duration_ps"].to_numpy(np.int64)).tolist()
        runs = [ProgramRun(plane, line, name, id_in_name[name] if program_id is None or program_id is pd.NA
                           else int(program_id), origin_ps + start, origin_ps + end)
                for plane, line, name, program_id, start, end in zip(
                    plane_of, line_names[line_row[modules]].tolist(), chosen["name"].tolist(), program_ids, starts,
                    ends, strict=True)]
    else:
        both = (events[PROGRAM_ID_STAT].notna() & events[RUN_ID_STAT].notna()).to_numpy(dtype=bool)
        rows = np.flatnonzero(both)
        if not len(rows):
            return []
        spans = pd.DataFrame({
            "line_row": line_row[rows],
            "program_id": events[PROGRAM_ID_STAT].to_numpy(dtype=object)[rows],
            "run_id": events[RUN_ID_STAT].to_numpy(dtype=object)[rows],
            "start": events["start_ps"].to_numpy(np.int64)[rows],
        })
        spans["end"] = spans["start"] + events["duration_ps"].to_numpy(np.int64)[rows]
        grouped = spans.groupby(["line_row", "program_id", "run_id"], sort=False).agg(start=("start", "min"),
                                                                                     end=("end", "max"))
        line_plane = lines["plane_id"].tolist()
        runs = [ProgramRun(plane_names[line_plane[row]], line_names[row], "", int(program_id), origin_ps + start,
                           origin_ps + end)
                for (row, program_id, _), start, end in zip(grouped.index.tolist(), grouped["start"].tolist(),
                                                            grouped["end"].tolist(), strict=True)]
    return sorted(runs, key=lambda r: (r.start_ps, r.plane))
