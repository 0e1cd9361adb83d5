"""The buffer plans of a capture's programs and the one running at a time: ``plans_of`` decodes the ``HloProto``s
that ``captures.memory_capture`` read off the ``/host:metadata`` plane (``plans_from_xspace`` and ``program_runs``
read a capture for them alone), and ``plan_for``/``plan_at``/``largest_plan`` pick the plan of a program by id,
name or the time it ran."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tpudoctor.captures.buffer_plan import ProgramPlan
from tpudoctor.captures.hlo import PlanError, decode_hlo_proto
from tpudoctor.captures.memory_capture import (
    HloProtoBytes,
    MemoryCapture,
    ProgramRun,
    memory_capture_from_bytes,
    read_memory_capture,
    split_event_name,
)

__all__ = ["ProgramRun", "largest_plan", "plan_at", "plan_for", "plans_from_xspace", "plans_of", "program_runs",
           "split_event_name"]


def plans_of(hlo_protos: Iterable[HloProtoBytes], *, errors: list[str] | None = None) -> dict[str, ProgramPlan]:
    """Event name (``jit_f(6)``) -> plan, for every program whose ``HloProto`` carries a buffer assignment. A
    program whose proto does not decode is left out and, when ``errors`` is given, named there."""
    plans: dict[str, ProgramPlan] = {}
    for hlo in hlo_protos:
        try:
            plans[hlo.event_name] = decode_hlo_proto(hlo.data, program_id=hlo.program_id, event_name=hlo.event_name)
        except PlanError as exc:
            if errors is not None:
                errors.append(str(exc))
    return plans


def _capture(source: str | bytes) -> MemoryCapture:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return memory_capture_from_bytes(bytes(source), source="<bytes>")
    return read_memory_capture(source)


def plans_from_xspace(source: str | bytes, *, errors: list[str] | None = None) -> dict[str, ProgramPlan]:
    """``plans_of`` the programs of a capture (a local path or its bytes) alone."""
    return plans_of(_capture(source).hlo_protos, errors=errors)


def program_runs(source: str | bytes) -> list[ProgramRun]:
    """Every program run of a capture (a local path or its bytes): ``memory_capture.ProgramRun``."""
    return _capture(source).runs


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
