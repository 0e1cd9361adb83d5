"""Small buffer plans written by hand, for rule examples and tests: a list of ``Value``s becomes an ``HloProto``
(through the same subset descriptor a capture is read with) and then a ``ProgramPlan`` (through the same
decoder), so that an example exercises the path a real capture takes.

Each parameter and output gets its own allocation; the temporaries share one temporary allocation, the live
ones side by side at the heap peak (a heap-simulator trace allocates the others, frees them, then allocates the
live ones); constants get constant allocations.
"""

from __future__ import annotations

import dataclasses
import math

from tpudoctor.captures.buffer_plan import ProgramPlan
from tpudoctor.captures.hlo import decode_hlo_proto
from tpudoctor.captures.hlo_schema import HEAP_ALLOC, HEAP_FREE, PRIMITIVE_TYPES, message_class
from tpudoctor.captures.hlo_shapes import Shape

_TYPE_NUMBER = {name: number for number, name in PRIMITIVE_TYPES.items()}
_SHARDING_NUMBER = {"replicated": 0, "maximal": 1, "tuple": 2, "other": 3, "manual": 4}


@dataclasses.dataclass(frozen=True)
class Value:
    """One HLO value of a synthetic plan."""

    name: str
    dtype: str = "f32"
    dims: tuple[int, ...] = ()
    kind: str = "temp"
    """``parameter``, ``output``, ``temp`` or ``constant``."""
    op_name: str = ""
    opcode: str = ""
    """Default: ``parameter`` for a parameter, ``constant`` for a constant, ``fusion`` otherwise."""
    operands: tuple[str, ...] = ()
    tiles: tuple[tuple[int, ...], ...] = ()
    size_bytes: int | None = None
    """Default: the tiled size (the logical size without tiles)."""
    live: bool = True
    """A temporary live at the heap peak (the others come and go before it)."""
    custom_call_target: str = ""
    sharding: tuple[str, tuple[int, ...], bool] | None = None
    """(type, tile assignment dimensions, replicate on the last tile dimension)."""
    donated: bool = False
    """A parameter the output aliases (its allocation is also live out)."""

    @property
    def shape(self) -> Shape:
        return Shape(self.dtype, tuple(self.dims), tuple(range(len(self.dims)))[::-1], tuple(self.tiles))

    @property
    def bytes(self) -> int:
        return self.size_bytes if self.size_bytes is not None else self.shape.tiled_bytes


def _fill_shape(msg, value: Value) -> None:
    msg.element_type = _TYPE_NUMBER[value.dtype]
    msg.dimensions.extend(value.dims)
    msg.layout.minor_to_major.extend(range(len(value.dims) - 1, -1, -1))
    for tile in value.tiles:
        msg.layout.tiles.add().dimensions.extend(tile)


def synthetic_hlo_proto(values: list[Value], *, name: str = "jit_synthetic", fragmentation_bytes: int = 0,
                        partitions: int = 1):
    """The ``HloProto`` message of ``values`` (see the module docstring)."""
    proto = message_class("HloProto")()
    module = proto.hlo_module
    module.name, module.entry_computation_name, module.id = name, "main", 1
    if partitions > 1:
        module.device_assignment.replica_count = 1
        module.device_assignment.computation_count = partitions
    computation = module.computations.add(name="main", id=1)
    ids = {v.name: i + 1 for i, v in enumerate(values)}
    parameters = [v for v in values if v.kind == "parameter"]
    for v in values:
        inst = computation.instructions.add(name=v.name, id=ids[v.name])
        inst.opcode = v.opcode or {"parameter": "parameter", "constant": "constant"}.get(v.kind, "fusion")
        _fill_shape(inst.shape, v)
        inst.metadata.op_name = v.op_name
        inst.operand_ids.extend(ids[o] for o in v.operands)
        if v.kind == "parameter":
            inst.parameter_number = parameters.index(v)
            _fill_shape(module.host_program_shape.parameters.add(), v)
        if v.custom_call_target:
            inst.custom_call_target = v.custom_call_target
        if v.sharding is not None:
            kind, tile_dims, last = v.sharding
            inst.sharding.type = _SHARDING_NUMBER[kind]
            inst.sharding.tile_assignment_dimensions.extend(tile_dims)
            inst.sharding.tile_assignment_devices.extend(range(math.prod(tile_dims)))
            inst.sharding.replicate_on_last_tile_dim = last
    outputs = [v for v in values if v.kind == "output" or v.donated]
    root = computation.instructions.add(name="tuple", id=len(values) + 1, opcode="tuple")
    root.shape.element_type = _TYPE_NUMBER["tuple"]
    root.operand_ids.extend(ids[v.name] for v in outputs)
    for v in outputs:
        _fill_shape(root.shape.tuple_shapes.add(), v)
    module.host_program_shape.result.CopyFrom(root.shape)
    computation.root_id = root.id
    for i, v in enumerate(outputs):
        if v.donated:
            entry = module.input_output_alias.entries.add(parameter_number=parameters.index(v))
            entry.output_shape_index.append(i)

    assignment = proto.buffer_assignment
    for v in values:
        lb = assignment.logical_buffers.add(id=ids[v.name], size=v.bytes)
        lb.defined_at.instruction_name, lb.defined_at.instruction_id = v.name, ids[v.name]
    index = 0

    def allocation(size: int, **fields):
        nonlocal index
        a = assignment.buffer_allocations.add(index=index, size=size, **fields)
        index += 1
        return a

    for v in values:
        if v.kind == "parameter":
            a = allocation(v.bytes, is_entry_computation_parameter=True, parameter_number=parameters.index(v),
                           maybe_live_out=v.donated, is_parameter_aliased_with_output=v.donated)
        elif v.kind == "output":
            a = allocation(v.bytes, maybe_live_out=True)
        elif v.kind == "constant":
            a = allocation(v.bytes, is_constant=True)
        else:
            continue
        a.assigned.add(logical_buffer_id=ids[v.name], offset=0, size=v.bytes)
    temps = [v for v in values if v.kind == "temp"]
    if temps:
        live = [v for v in temps if v.live]
        size = sum(v.bytes for v in live) + fragmentation_bytes
        a = allocation(max([size] + [v.bytes for v in temps]))
        trace = assignment.heap_simulator_traces.add(whole_module_simulation=True,
                                                     buffer_allocation_index=a.index)
        offset = 0
        for v in temps:
            if not v.live:
                a.assigned.add(logical_buffer_id=ids[v.name], offset=0, size=v.bytes)
                trace.events.add(kind=HEAP_ALLOC, buffer_id=ids[v.name], instruction_name=v.name,
                                 computation_name="main")
                trace.events.add(kind=HEAP_FREE, buffer_id=ids[v.name], instruction_name=v.name,
                                 computation_name="main")
        for v in live:
            a.assigned.add(logical_buffer_id=ids[v.name], offset=offset, size=v.bytes)
            offset += v.bytes
            trace.events.add(kind=HEAP_ALLOC, buffer_id=ids[v.name], instruction_name=v.name,
                             computation_name="main")
        for v in live:
            trace.events.add(kind=HEAP_FREE, buffer_id=ids[v.name], instruction_name=v.name,
                             computation_name="main")
    return proto


def synthetic_plan(values: list[Value], *, name: str = "jit_synthetic", program_id: int = 1,
                   fragmentation_bytes: int = 0, partitions: int = 1) -> ProgramPlan:
    """``values`` as a decoded ``ProgramPlan`` (serialised and decoded again, as from a capture)."""
    proto = synthetic_hlo_proto(values, name=name, fragmentation_bytes=fragmentation_bytes, partitions=partitions)
    return decode_hlo_proto(proto.SerializeToString(), program_id=program_id, event_name=f"{name}({program_id})")
