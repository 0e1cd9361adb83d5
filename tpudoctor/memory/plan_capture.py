"""Finds the buffer plans in an XSpace capture and when each program ran: ``plans_from_xspace`` decodes the
``Hlo Proto`` of every program on the ``/host:metadata`` plane, ``program_runs`` lists the runs (a device plane's
``XLA Modules`` line, or on CPU the op events that carry ``program_id``), and ``plan_for``/``plan_at``/
``largest_plan`` pick the plan of a program by id, name or the time it ran."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tpudoctor.memory.buffer_plan import ProgramPlan
from tpudoctor.memory.plan_decode import PlanError, decode_hlo_proto

HLO_PROTO_STAT = "Hlo Proto"
PROGRAM_ID_STAT = "program_id"
METADATA_PLANE = "/host:metadata"
MODULES_LINE = "XLA Modules"

_EVENT_NAME = re.compile(r"^(?P<name>.*?)\((?P<id>\d+)\)$")


def split_event_name(name: str) -> tuple[str, int | None]:
    """``jit_f(6)`` -> (``jit_f``, 6); a name without the id -> (name, None)."""
    match = _EVENT_NAME.match(name)
    return (match["name"], int(match["id"])) if match else (name, None)


def _planes(source: str | bytes) -> Iterable[Any]:
    """The planes of an XSpace (a local path or its bytes), each with ``name``, ``event_metadata``,
    ``stat_metadata`` and ``lines`` (bytes of each XLine, parsed by the caller)."""
    from tpudoctor.captures.schema import message_class as xplane_class

    if isinstance(source, (bytes, bytearray, memoryview)):
        yield from xplane_class("XSpace", raw=True).FromString(bytes(source)).planes
        return
    import os

    from tpudoctor.captures.xspace.planes_on_disk import layout, planes_on_disk

    with open(source, "rb") as handle:
        found = layout(handle, os.path.getsize(source))
    if found is None:
        with open(source, "rb") as handle:
            yield from xplane_class("XSpace", raw=True).FromString(handle.read()).planes
        return
    yield from planes_on_disk(str(source), str(source), found[0])


def _stat_value(stat) -> Any:
    which = stat.WhichOneof("value")
    return getattr(stat, which) if which else None


def plans_from_xspace(source: str | bytes, *, errors: list[str] | None = None) -> dict[str, ProgramPlan]:
    """Event name (``jit_f(6)``) -> plan, for every program of the capture's ``/host:metadata`` plane that
    carries an ``Hlo Proto`` with a buffer assignment. A program whose proto does not decode is left out and,
    when ``errors`` is given, named there."""
    plans: dict[str, ProgramPlan] = {}
    for plane in _planes(source):
        if plane.name != METADATA_PLANE:
            continue
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for metadata in plane.event_metadata.values():
            stats = {stat_names.get(s.metadata_id, ""): s for s in metadata.stats}
            hlo = stats.get(HLO_PROTO_STAT)
            if hlo is None or not hlo.bytes_value:
                continue
            program_id = _stat_value(stats[PROGRAM_ID_STAT]) if PROGRAM_ID_STAT in stats else None
            if program_id is None:
                program_id = split_event_name(metadata.name)[1]
            try:
                plans[metadata.name] = decode_hlo_proto(hlo.bytes_value, program_id=program_id,
                                                        event_name=metadata.name)
            except PlanError as exc:
                if errors is not None:
                    errors.append(str(exc))
    return plans


@dataclasses.dataclass(frozen=True)
class ProgramRun:
    """One run of a program in the capture: where (plane, line), which program, when (ps since the epoch)."""

    plane: str
    line: str
    name: str
    program_id: int | None
    start_ps: int
    end_ps: int


def program_runs(source: str | bytes) -> list[ProgramRun]:
    """Every program run of the capture: the events of each device plane's ``XLA Modules`` line; where no plane
    has one (JAX on CPU), one run per (line, program_id, run_id) spanning the op events that carry them."""
    from tpudoctor.captures.schema import message_class as xplane_class

    line_class, event_class = xplane_class("XLine", raw=True), xplane_class("XEvent")
    runs: list[ProgramRun] = []
    op_spans: dict[tuple[str, str, int, Any], list[int]] = {}
    for plane in _planes(source):
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        metadata_names = {k: v.name for k, v in plane.event_metadata.items()}
        metadata_stats = {k: {stat_names.get(s.metadata_id): _stat_value(s) for s in v.stats}
                          for k, v in plane.event_metadata.items() if v.stats}
        for raw_line in plane.lines:
            line = line_class.FromString(raw_line)
            base_ps = line.timestamp_ns * 1000
            is_modules = line.name == MODULES_LINE
            for raw_event in line.events:
                event = event_class.FromString(raw_event)
                stats = dict(metadata_stats.get(event.metadata_id, {}))
                stats.update({stat_names.get(s.metadata_id): _stat_value(s) for s in event.stats})
                start = base_ps + event.offset_ps
                name = metadata_names.get(event.metadata_id, "")
                if is_modules:
                    program_id = stats.get(PROGRAM_ID_STAT)
                    program_id = split_event_name(name)[1] if program_id is None else int(program_id)
                    runs.append(ProgramRun(plane.name, line.name, name, program_id, start, start + event.duration_ps))
                elif PROGRAM_ID_STAT in stats and "run_id" in stats:
                    key = (plane.name, line.name, int(stats[PROGRAM_ID_STAT]), stats["run_id"])
                    span = op_spans.setdefault(key, [start, start + event.duration_ps])
                    span[0], span[1] = min(span[0], start), max(span[1], start + event.duration_ps)
    if not runs:
        runs = [ProgramRun(plane, line, "", program_id, span[0], span[1])
                for (plane, line, program_id, _), span in op_spans.items()]
    return sorted(runs, key=lambda r: (r.start_ps, r.plane))


def plan_for(plans: Mapping[str, ProgramPlan], *, program_id: int | None = None,
             name: str | None = None) -> ProgramPlan | None:
    """The plan of a program named by id or by name (``jit_f(6)`` or the module name ``jit_f``)."""
    for plan in plans.values():
        if program_id is not None and plan.program_id == program_id:
            return plan
    if name is not None:
        if name in plans:
            return plans[name]
        base, pid = split_event_name(name)
        for plan in plans.values():
            if plan.module_name == base and (pid is None or plan.program_id in (None, pid)):
                return plan
    return None


def plan_at(plans: Mapping[str, ProgramPlan], runs: Iterable[ProgramRun], time_ps: int, *,
            plane: str | None = None) -> ProgramPlan | None:
    """The plan of the program running at ``time_ps`` (on ``plane`` where given; the latest to start when
    several overlap), None when no run covers that time or its program has no plan."""
    covering = [r for r in runs if r.start_ps <= time_ps <= r.end_ps and (plane is None or r.plane == plane)]
    for run in sorted(covering, key=lambda r: -r.start_ps):
        plan = plan_for(plans, program_id=run.program_id, name=run.name or None)
        if plan is not None:
            return plan
    return None


def largest_plan(plans: Mapping[str, ProgramPlan]) -> ProgramPlan | None:
    """The plan with the largest footprint (the usual suspect when the capture cannot say which ran at the
    peak)."""
    return max(plans.values(), key=lambda p: p.peak_bytes, default=None)
