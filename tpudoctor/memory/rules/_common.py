"""What several memory rules read: entry parameters with their allocations, result leaves, live buffers."""

from __future__ import annotations

import re

from tpudoctor.captures.buffer_plan import Allocation, Instruction, ProgramPlan
from tpudoctor.captures.hlo_shapes import Shape
from tpudoctor.memory.attribution import is_backward, is_optimizer_name, parameter_name
from tpudoctor.memory.fix_rule import MemoryPlanInput

DATA_NAME = re.compile(r"(?<![a-z])(x|y|batch|inputs?|tokens?|labels?|targets?|images?|ids|data|features|masks?)"
                       r"(?![a-z])", re.IGNORECASE)
"""Argument names of the data rather than the model (JAX names a parameter after its argument's path)."""


def parameters(plan: ProgramPlan) -> list[tuple[Instruction, Allocation | None, str]]:
    """Each array entry parameter, its allocation (None where the plan has none of its own) and its name."""
    by_number = {a.parameter_number: a for a in plan.allocations if a.kind == "parameter"
                 and not a.parameter_shape_index}
    return [(inst, by_number.get(inst.parameter_number), parameter_name(plan, inst.parameter_number))
            for inst in plan.entry_parameters if inst.shape.is_array]


def donated_parameters(plan: ProgramPlan) -> set[int]:
    return {number for number, _, _ in plan.io_aliases} | {
        a.parameter_number for a in plan.allocations if a.kind == "parameter" and a.maybe_live_out
        and a.parameter_number is not None}


def is_optimizer_parameter(subject: MemoryPlanInput, number: int | None, name: str) -> bool:
    return number in set(subject.optimizer_parameters) or is_optimizer_name(name)


def same_kind(a: Shape, b: Shape) -> bool:
    return a.dtype == b.dtype and a.dims == b.dims


def top_level_names(names: list[str]) -> list[str]:
    """``params['w']``, ``opt_state[0].mu`` -> ``params``, ``opt_state`` (the Python argument), in order."""
    out: list[str] = []
    for name in names:
        head = re.split(r"[\[.]", name, maxsplit=1)[0]
        if head and head not in out:
            out.append(head)
    return out


def output_is_gradient(plan: ProgramPlan, inst: Instruction | None) -> bool:
    return inst is not None and is_backward(inst.op_name)


def live_temporary_shares(subject: MemoryPlanInput):
    """The attribution's shares of buffers live at the heap peak (activations and temporaries), padding
    included with its buffer: buffer id -> bytes."""
    out: dict[int, int] = {}
    for share in subject.attributed.shares:
        if share.buffer_id is not None and share.bucket in ("activations", "temporaries", "padding"):
            buffer = subject.plan.buffers.get(share.buffer_id)
            if buffer is not None and subject.plan.allocations_by_index[buffer.allocation].kind == "temporary":
                out[share.buffer_id] = out.get(share.buffer_id, 0) + share.bytes
    return out
