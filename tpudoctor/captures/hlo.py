"""Decodes one ``xla.HloProto`` (the optimised module and its ``BufferAssignmentProto``) into a ``ProgramPlan``,
replaying the heap simulator's traces for the moment each temporary allocation peaks (``HeapPeak``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tpudoctor.captures.buffer_plan import Allocation, Buffer, HeapPeak, Instruction, ProgramPlan
from tpudoctor.captures.hlo_schema import (
    HEAP_ALLOC,
    HEAP_FREE,
    HEAP_SHARE_WITH,
    PRIMITIVE_TYPES,
    parse_hlo_proto,
)
from tpudoctor.captures.hlo_shapes import Shape, Sharding

_SHARDING_TYPES = {0: "replicated", 1: "maximal", 2: "tuple", 3: "other", 4: "manual", 5: "unknown", 6: "unreduced"}


class PlanError(ValueError):
    """An ``HloProto`` that does not decode, or has no buffer assignment."""


def _shape(msg) -> Shape:
    dtype = PRIMITIVE_TYPES.get(msg.element_type, f"type{msg.element_type}")
    layout = msg.layout
    return Shape(dtype=dtype, dims=tuple(msg.dimensions), minor_to_major=tuple(layout.minor_to_major),
                 tiles=tuple(tuple(t.dimensions) for t in layout.tiles), element_bits=layout.element_size_in_bits,
                 memory_space=layout.memory_space, tuple_shapes=tuple(_shape(s) for s in msg.tuple_shapes))


def _sharding(msg) -> Sharding:
    return Sharding(type=_SHARDING_TYPES.get(msg.type, "unknown"), tile_dims=tuple(msg.tile_assignment_dimensions),
                    replicate_on_last_tile_dim=msg.replicate_on_last_tile_dim,
                    devices=len(msg.tile_assignment_devices) or math.prod(msg.iota_reshape_dims or (0,)),
                    tuple_shardings=tuple(_sharding(s) for s in msg.tuple_shardings))


class _Frames:
    """``StackFrameIndexProto``: a stack frame id (1-based) -> ``file:line`` of its innermost location."""

    def __init__(self, index):
        self.index = index

    def source(self, frame_id: int) -> str:
        frames = self.index.stack_frames
        if not 0 < frame_id <= len(frames):
            return ""
        location_id = frames[frame_id - 1].file_location_id
        if not 0 < location_id <= len(self.index.file_locations):
            return ""
        location = self.index.file_locations[location_id - 1]
        names = self.index.file_names
        file_name = names[location.file_name_id - 1] if 0 < location.file_name_id <= len(names) else ""
        return f"{file_name}:{location.line}" if file_name else ""


def decode_hlo_proto(data: bytes | Any, *, program_id: int | None = None, event_name: str = "") -> ProgramPlan:
    """One ``xla.HloProto`` (bytes, or a message of ``hlo_schema.message_class("HloProto")``) as a plan;
    ``PlanError`` when it does not decode or carries no buffer assignment."""
    proto = _hlo_proto(data, event_name)
    module = proto.hlo_module
    instructions, fused_op_names = _instructions(module)
    assignment = proto.buffer_assignment
    allocations = _allocations(assignment, instructions)
    program = module.host_program_shape
    aliases = tuple((e.parameter_number, tuple(e.parameter_shape_index), tuple(e.output_shape_index))
                    for e in module.input_output_alias.entries)
    devices = module.device_assignment
    return ProgramPlan(
        module_name=module.name, program_id=program_id, entry_computation=module.entry_computation_name,
        allocations=allocations, instructions=instructions, heap_peaks=_heap_peaks(assignment, allocations),
        parameter_names=tuple(program.parameter_names), io_aliases=aliases,
        partitions=max(1, devices.computation_count), replicas=max(1, devices.replica_count),
        result_shape=_shape(program.result) if program.HasField("result") else None,
        parameter_shapes=tuple(_shape(s) for s in program.parameters), event_name=event_name or module.name,
        computation_ids={c.name: c.id for c in module.computations},
        root_ids={c.name: c.root_id for c in module.computations},
        fused_op_names=tuple(sorted(set(fused_op_names))))


def _hlo_proto(data: bytes | Any, event_name: str):
    """The ``HloProto`` message of ``data``; ``PlanError`` when it does not decode or has no buffer assignment."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            proto = parse_hlo_proto(data)
        except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError
            raise PlanError(f"the HloProto of {event_name or 'a program'} does not decode: {exc}") from exc
    else:
        proto = data
    if not proto.HasField("buffer_assignment") or not proto.buffer_assignment.buffer_allocations:
        raise PlanError(f"the HloProto of {event_name or proto.hlo_module.name or 'a program'} has no buffer "
                        "assignment (the capture kept the module only)")
    return proto


def _instructions(module) -> tuple[dict[int, Instruction], list[str]]:
    """The module's instructions by id (fusion computations left out) and the op names inside its fusions."""
    frames = _Frames(module.stack_frame_index)
    instructions: dict[int, Instruction] = {}
    fused_op_names: list[str] = []
    for computation in module.computations:
        if computation.is_fusion_computation:
            # a fusion's inner instructions define no buffer: only their op names are kept (backward ops)
            fused_op_names.extend(inst.metadata.op_name for inst in computation.instructions)
            continue
        for inst in computation.instructions:
            meta = inst.metadata
            source = f"{meta.source_file}:{meta.source_line}" if meta.source_file else frames.source(
                meta.stack_frame_id)
            instructions[inst.id] = Instruction(
                id=inst.id, name=inst.name, opcode=inst.opcode, computation=computation.name, shape=_shape(inst.shape),
                op_name=meta.op_name, op_type=meta.op_type, source=source,
                parameter_number=inst.parameter_number if inst.opcode == "parameter" else None,
                operand_ids=tuple(inst.operand_ids), called_computation_ids=tuple(inst.called_computation_ids),
                custom_call_target=inst.custom_call_target, is_host_transfer=inst.is_host_transfer,
                has_side_effect=inst.custom_call_has_side_effect,
                sharding=_sharding(inst.sharding) if inst.HasField("sharding") else None)
    return instructions, fused_op_names


def _allocations(assignment, instructions: Mapping[int, Instruction]) -> list[Allocation]:
    """The assignment's allocations, each with its kind and the logical buffers assigned to it."""
    by_name = {i.name: i for i in instructions.values()}
    logical = {lb.id: lb for lb in assignment.logical_buffers}

    def buffer(assigned, allocation_index: int) -> Buffer:
        lb = logical.get(assigned.logical_buffer_id)
        where = lb.defined_at if lb is not None else None
        inst = None
        if where is not None:
            inst = instructions.get(where.instruction_id) if where.instruction_id else None
            inst = inst or by_name.get(where.instruction_name)
        index = tuple(where.shape_index) if where is not None else ()
        shape = inst.shape.subshape(index) if inst is not None else Shape("unknown")
        return Buffer(id=assigned.logical_buffer_id, allocation=allocation_index, offset_bytes=assigned.offset,
                      size_bytes=assigned.size or (lb.size if lb is not None else 0),
                      instruction=inst.name if inst else (where.instruction_name if where is not None else ""),
                      instruction_id=inst.id if inst else 0, opcode=inst.opcode if inst else "",
                      computation=inst.computation if inst else "", shape_index=index, shape=shape,
                      op_name=inst.op_name if inst else "", source=inst.source if inst else "",
                      color=lb.color if lb is not None else 0)

    return [Allocation(
        index=a.index, size_bytes=a.size, kind=_allocation_kind(a), buffers=tuple(buffer(x, a.index) for x in a.assigned),
        parameter_number=a.parameter_number if a.is_entry_computation_parameter else None,
        parameter_shape_index=tuple(a.parameter_shape_index), maybe_live_out=a.maybe_live_out,
        aliased_with_output=a.is_parameter_aliased_with_output or (a.is_entry_computation_parameter
                                                                  and a.maybe_live_out),
        is_thread_local=a.is_thread_local, is_constant=a.is_constant, is_tuple=a.is_tuple, color=a.color)
        for a in assignment.buffer_allocations]


def _allocation_kind(a) -> str:
    """One of ``buffer_plan.ALLOCATION_KINDS`` for a ``BufferAllocationProto``."""
    if a.is_thread_local:
        return "thread-local"
    if a.is_entry_computation_parameter:
        return "parameter"
    if a.is_constant:
        return "constant"
    if a.maybe_live_out:
        return "output"
    return "temporary"


def _heap_peaks(assignment, allocations: list[Allocation]) -> dict[int, HeapPeak]:
    """Allocation index -> the highest peak of the heap-simulator traces of that allocation."""
    sizes = {lb.id: lb.size for lb in assignment.logical_buffers}
    heap_peaks: dict[int, HeapPeak] = {}
    allocation_of = {b.id: a.index for a in allocations for b in a.buffers}
    for trace in assignment.heap_simulator_traces:
        peak = _heap_peak(trace, sizes, allocation_of)
        if peak is not None and (peak.allocation not in heap_peaks
                                 or peak.live_bytes > heap_peaks[peak.allocation].live_bytes):
            heap_peaks[peak.allocation] = peak
    return heap_peaks


def _heap_peak(trace, sizes: Mapping[int, int], allocation_of: Mapping[int, int]) -> HeapPeak | None:
    """Replay one heap-simulator trace: ALLOC adds a buffer's bytes; SHARE_WITH puts a buffer in the bytes of
    another (XLA frees an operand just before its in-place user shares its bytes: the bytes are live again);
    FREE takes the bytes away once no buffer sharing them is live. A second replay up to the peak gives the
    live set then (per shared group, the buffer written there last).

    The trace's allocation is the one its buffers are assigned to: ``buffer_allocation_index`` does not number
    the allocations as the assignment does once constants are added (JAX 0.10 on CPU: 4 for allocation 10)."""
    events = trace.events
    if not events:
        return None
    counts: dict[int, int] = {}
    for ev in events:
        if ev.kind == HEAP_ALLOC and ev.buffer_id in allocation_of:
            counts[allocation_of[ev.buffer_id]] = counts.get(allocation_of[ev.buffer_id], 0) + 1
    allocation = max(counts, key=counts.__getitem__) if counts else trace.buffer_allocation_index
    best, best_index, _ = _replay(events, sizes, len(events))
    if best_index < 0:
        return None
    _, _, holders = _replay(events, sizes, best_index + 1)
    at = events[best_index]
    return HeapPeak(allocation=allocation, live_bytes=best, buffer_ids=holders,
                    instruction=at.instruction_name, computation=at.computation_name, event_index=best_index,
                    events=len(events))


def _replay(events, sizes: Mapping[int, int], stop: int) -> tuple[int, int, tuple[int, ...]]:
    """(peak bytes, index of the event that reached it, live buffers after event ``stop - 1`` in the order
    their bytes were allocated)."""
    root_of: dict[int, int] = {}
    live_members: dict[int, list[int]] = {}
    allocated_at: dict[int, int] = {}
    live = best = 0
    best_index = -1
    for i in range(stop):
        ev = events[i]
        if ev.kind == HEAP_FREE:
            root = root_of.get(ev.buffer_id, ev.buffer_id)
            members = live_members.get(root)
            if members and ev.buffer_id in members:
                members.remove(ev.buffer_id)
                if not members:
                    del live_members[root]
                    live -= sizes.get(root, 0)
            continue
        if ev.kind == HEAP_ALLOC:
            root = ev.buffer_id
        elif ev.kind == HEAP_SHARE_WITH:
            root = root_of.get(ev.share_with_canonical_id, ev.share_with_canonical_id)
        else:
            continue
        root_of[ev.buffer_id] = root
        members = live_members.setdefault(root, [])
        if not members:
            live += sizes.get(root, 0)
            allocated_at[root] = i
        members.append(ev.buffer_id)
        if live > best:
            best, best_index = live, i
    order = sorted(live_members, key=allocated_at.__getitem__)
    return best, best_index, tuple(live_members[root][-1] for root in order)
