"""The compiler's buffer plan: each program's allocations and the logical buffers in them, from its ``HloProto``.

An XSpace capture (``*.xplane.pb``) of JAX or TensorFlow on XLA keeps, on its ``/host:metadata`` plane, one
``XEventMetadata`` per compiled program (named like ``jit_f(6)``) with two stats: ``Hlo Proto`` (bytes: an
``xla.HloProto``, the optimised module and its ``BufferAssignmentProto``) and ``program_id``. ``plans_from_xspace``
decodes them into ``ProgramPlan``s; ``decode_hlo_proto`` decodes one ``HloProto`` however it was obtained.

A plan's allocations are what the program holds while it runs: the entry parameters, the outputs
(``maybe_live_out``), the temporary heap, constants and thread-local scratch. Their sizes add up to what
``jax.stages.Compiled.memory_analysis()`` reports (argument + output + temp - alias). The heap simulator's trace
(``heap_simulator_traces``), where present, says which logical buffers share the temporary allocation at its
peak; ``HeapPeak`` is that moment.

``program_runs`` lists when each program ran (a device plane's ``XLA Modules`` line, or on CPU the op events
that carry ``program_id``), so that the program running at a memory peak is found by its time.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

from tpudoctor.memory.hlo_schema import (
    ELEMENT_BITS,
    HEAP_ALLOC,
    HEAP_FREE,
    HEAP_SHARE_WITH,
    PRIMITIVE_TYPES,
    message_class,
)

HLO_PROTO_STAT = "Hlo Proto"
PROGRAM_ID_STAT = "program_id"
METADATA_PLANE = "/host:metadata"
MODULES_LINE = "XLA Modules"

ALLOCATION_KINDS = ("parameter", "output", "temporary", "constant", "thread-local")
"""What an allocation holds: an entry parameter (``parameter``; one also live out is a donated parameter), the
program's result (``output``: ``maybe_live_out``), the temporary heap, constants, thread-local scratch."""

DEFAULT_MEMORY_COLOR = 0
"""The memory space the peak counts (HBM on TPU and GPU, RAM on CPU); other colours are alternate memory (VMEM,
pinned host) and are listed, not counted."""


@dataclasses.dataclass(frozen=True)
class Shape:
    """An XLA shape: dtype (``f32``), dimensions, layout (``minor_to_major``, tiles) and tuple elements."""

    dtype: str
    dims: tuple[int, ...] = ()
    minor_to_major: tuple[int, ...] = ()
    tiles: tuple[tuple[int, ...], ...] = ()
    element_bits: int = 0
    """``layout.element_size_in_bits`` where set (sub-byte packing), else 0 (the dtype's own width)."""
    memory_space: int = 0
    tuple_shapes: tuple[Shape, ...] = ()

    @property
    def is_array(self) -> bool:
        return self.dtype in ELEMENT_BITS

    @property
    def elements(self) -> int:
        return math.prod(self.dims)

    @property
    def bits(self) -> int:
        return self.element_bits or ELEMENT_BITS.get(self.dtype, 0)

    @property
    def logical_bytes(self) -> int:
        """Elements x element size, no padding (0 for a tuple, token or opaque value)."""
        return -(-self.elements * self.bits // 8) if self.is_array else 0

    @property
    def physical_dims(self) -> tuple[int, ...]:
        """The dimensions major to minor, as laid out in memory."""
        if len(self.minor_to_major) != len(self.dims):
            return self.dims
        return tuple(self.dims[i] for i in reversed(self.minor_to_major))

    @property
    def tiled_bytes(self) -> int:
        """Bytes the layout's tiles occupy (each minor dimension rounded up to its tile); the logical size
        where the layout has no tiles (CPU, GPU)."""
        if not self.is_array:
            return 0
        return -(-tiled_elements(self.physical_dims, self.tiles) * self.bits // 8)

    def subshape(self, index: Iterable[int]) -> Shape:
        shape = self
        for i in index:
            if not 0 <= i < len(shape.tuple_shapes):
                return shape
            shape = shape.tuple_shapes[i]
        return shape

    @property
    def text(self) -> str:
        """XLA's spelling: ``f32[64,256]{1,0:T(8,128)}``; a tuple as ``(f32[2], s32[])``."""
        if self.dtype == "tuple":
            return "(" + ", ".join(s.text for s in self.tuple_shapes) + ")"
        dims = ",".join(str(d) for d in self.dims)
        layout = ""
        if self.tiles or (self.minor_to_major and list(self.minor_to_major) != list(range(len(self.dims)))[::-1]):
            layout = "{" + ",".join(str(d) for d in self.minor_to_major)
            if self.tiles:
                layout += ":" + "".join("T(" + ",".join(str(t) for t in tile) + ")" for tile in self.tiles)
            layout += "}"
        return f"{self.dtype}[{dims}]{layout}"


def tiled_elements(dims: tuple[int, ...], tiles: tuple[tuple[int, ...], ...]) -> int:
    """Elements a major-to-minor shape occupies under XLA's tiling: the first tile applies to the minor
    dimensions (each rounded up to a whole number of tiles), each further tile to the tile before it."""
    if not tiles:
        return math.prod(dims)
    tile = tiles[0]
    dims = (1,) * max(0, len(tile) - len(dims)) + tuple(dims)
    outer, minor = dims[:len(dims) - len(tile)], dims[len(dims) - len(tile):]
    count = math.prod(outer)
    tile_dims = []
    for d, t in zip(minor, tile, strict=True):
        t = d if t <= 0 else t  # kCombineDimension (-1): the dimension is not tiled
        count *= -(-d // t) if t else 0
        tile_dims.append(t)
    return count * tiled_elements(tuple(tile_dims), tiles[1:])


@dataclasses.dataclass(frozen=True)
class Sharding:
    """An ``OpSharding``: ``replicated``, ``maximal``, ``tuple``, ``other`` (tiled) or ``manual``; for tiled, the
    tile assignment dimensions and how many devices hold each tile (``replication``)."""

    type: str
    tile_dims: tuple[int, ...] = ()
    replicate_on_last_tile_dim: bool = False
    devices: int = 0
    tuple_shardings: tuple[Sharding, ...] = ()

    @property
    def replication(self) -> int | None:
        """Devices holding a copy of each shard: the last tile dimension where it replicates, 1 for a fully
        tiled value, None for replicated (every device of the program: the caller knows how many)."""
        if self.type == "other":
            return self.tile_dims[-1] if self.replicate_on_last_tile_dim and self.tile_dims else 1
        return None if self.type == "replicated" else 1

    @property
    def shards(self) -> int:
        """Pieces the value is cut into (1 replicated)."""
        if self.type != "other" or not self.tile_dims:
            return 1
        return math.prod(self.tile_dims) // (self.replication or 1)


_SHARDING_TYPES = {0: "replicated", 1: "maximal", 2: "tuple", 3: "other", 4: "manual", 5: "unknown", 6: "unreduced"}


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One HLO instruction of the optimised module."""

    id: int
    name: str
    opcode: str
    computation: str
    shape: Shape
    op_name: str = ""
    op_type: str = ""
    source: str = ""
    """``file:line`` of the Python that made it, where the module records it."""
    parameter_number: int | None = None
    operand_ids: tuple[int, ...] = ()
    called_computation_ids: tuple[int, ...] = ()
    custom_call_target: str = ""
    is_host_transfer: bool = False
    has_side_effect: bool = False
    sharding: Sharding | None = None


@dataclasses.dataclass(frozen=True)
class Buffer:
    """One logical buffer (an HLO value) and where the plan put it."""

    id: int
    allocation: int
    offset_bytes: int
    size_bytes: int
    instruction: str
    instruction_id: int
    opcode: str
    computation: str
    shape_index: tuple[int, ...]
    shape: Shape
    op_name: str = ""
    source: str = ""
    color: int = 0

    @property
    def dtype(self) -> str:
        return self.shape.dtype

    @property
    def logical_bytes(self) -> int:
        """Elements x element size; ``size_bytes`` itself for a tuple's index table."""
        return self.shape.logical_bytes if self.shape.is_array else self.size_bytes

    @property
    def padding_bytes(self) -> int:
        """Bytes the plan holds beyond the elements (tiling padding on TPU; 0 on CPU and GPU)."""
        return max(0, self.size_bytes - self.logical_bytes)


@dataclasses.dataclass(frozen=True)
class Allocation:
    """One buffer allocation: a contiguous range the program holds for its whole run, and the logical buffers
    assigned to it (at offsets; buffers not live at the same time may share bytes)."""

    index: int
    size_bytes: int
    kind: str
    """One of ``ALLOCATION_KINDS``."""
    buffers: tuple[Buffer, ...] = ()
    parameter_number: int | None = None
    parameter_shape_index: tuple[int, ...] = ()
    maybe_live_out: bool = False
    aliased_with_output: bool = False
    is_thread_local: bool = False
    is_constant: bool = False
    is_tuple: bool = False
    color: int = 0

    @property
    def counted(self) -> bool:
        """Part of the program's footprint in the default memory (not thread-local, not another colour)."""
        return not self.is_thread_local and self.color == DEFAULT_MEMORY_COLOR


@dataclasses.dataclass(frozen=True)
class HeapPeak:
    """The temporary allocation at the peak of the heap simulation: the bytes live then, the buffers holding
    them (one per shared group: the value last written there), and the instruction that reached it."""

    allocation: int
    live_bytes: int
    buffer_ids: tuple[int, ...]
    """The live buffers, in the order their bytes were allocated (the schedule's order)."""
    instruction: str
    computation: str
    event_index: int
    events: int


@dataclasses.dataclass
class ProgramPlan:
    """One compiled program's buffer plan."""

    module_name: str
    program_id: int | None
    entry_computation: str
    allocations: list[Allocation]
    instructions: dict[int, Instruction]
    """Id -> instruction, of every computation but fusions (whose inner instructions define no buffer)."""
    heap_peaks: dict[int, HeapPeak]
    parameter_names: tuple[str, ...] = ()
    io_aliases: tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...] = ()
    """(parameter number, parameter shape index, output shape index) the module aliases (donated buffers)."""
    partitions: int = 1
    replicas: int = 1
    result_shape: Shape | None = None
    parameter_shapes: tuple[Shape, ...] = ()
    event_name: str = ""
    """The capture's name for the program (``jit_f(6)``); the module name where decoded on its own."""
    computation_ids: dict[str, int] = dataclasses.field(default_factory=dict)
    root_ids: dict[str, int] = dataclasses.field(default_factory=dict)
    """Computation name -> its root instruction's id."""
    fused_op_names: tuple[str, ...] = ()
    """The distinct op names inside fusion computations (whose instructions ``instructions`` leaves out: they
    define no buffer)."""

    def outputs(self) -> list[tuple[tuple[int, ...], Shape, Instruction | None]]:
        """The entry computation's result leaves: (output shape index, shape, the instruction that makes it)."""
        root = self.instructions.get(self.root_ids.get(self.entry_computation, -1))
        if root is None:
            return []
        out: list[tuple[tuple[int, ...], Shape, Instruction | None]] = []

        def walk(inst: Instruction | None, shape: Shape, index: tuple[int, ...]) -> None:
            if shape.dtype == "tuple":
                operands = inst.operand_ids if inst is not None and inst.opcode == "tuple" else ()
                for i, sub in enumerate(shape.tuple_shapes):
                    walk(self.instructions.get(operands[i]) if i < len(operands) else None, sub, index + (i,))
            elif shape.is_array:
                out.append((index, shape, self.origin(inst) if inst is not None else None))

        walk(root, root.shape, ())
        return out

    @cached_property
    def callers(self) -> dict[str, list[Instruction]]:
        """Computation name -> the instructions that call it (a while, call, conditional or fusion)."""
        names = {cid: name for name, cid in self.computation_ids.items()}
        out: dict[str, list[Instruction]] = {}
        for inst in self.instructions.values():
            for cid in inst.called_computation_ids:
                if cid in names:
                    out.setdefault(names[cid], []).append(inst)
        return out

    def origin(self, instruction: Instruction | None, depth: int = 8) -> Instruction | None:
        """The instruction whose ``op_name`` says where a value comes from: itself where it has one; else, for
        a parameter of a called computation, its caller; for a copy, bitcast, tuple or get-tuple-element the
        compiler added, its first operand (``depth`` steps at most)."""
        while instruction is not None and not instruction.op_name and depth > 0:
            depth -= 1
            if instruction.opcode == "parameter" and instruction.computation != self.entry_computation:
                callers = self.callers.get(instruction.computation)
                instruction = callers[0] if callers else None
            elif instruction.operand_ids:
                instruction = self.instructions.get(instruction.operand_ids[0])
            else:
                return instruction
        return instruction

    def op_name_of(self, buffer: Buffer) -> str:
        """The buffer's ``op_name``, or that of its ``origin`` where the compiler left it empty."""
        if buffer.op_name:
            return buffer.op_name
        origin = self.origin(self.instructions.get(buffer.instruction_id))
        return origin.op_name if origin is not None else ""

    @cached_property
    def by_name(self) -> dict[str, Instruction]:
        return {i.name: i for i in self.instructions.values()}

    @cached_property
    def allocations_by_index(self) -> dict[int, Allocation]:
        return {a.index: a for a in self.allocations}

    @cached_property
    def buffers(self) -> dict[int, Buffer]:
        return {b.id: b for a in self.allocations for b in a.buffers}

    @cached_property
    def users(self) -> dict[int, list[Instruction]]:
        """Instruction id -> the instructions that take it as an operand."""
        out: dict[int, list[Instruction]] = {}
        for inst in self.instructions.values():
            for op in inst.operand_ids:
                out.setdefault(op, []).append(inst)
        return out

    @cached_property
    def entry_parameters(self) -> list[Instruction]:
        return sorted((i for i in self.instructions.values()
                       if i.opcode == "parameter" and i.computation == self.entry_computation),
                      key=lambda i: i.parameter_number or 0)

    def _sum(self, kinds: Iterable[str]) -> int:
        kinds = set(kinds)
        return sum(a.size_bytes for a in self.allocations if a.counted and a.kind in kinds)

    @property
    def peak_bytes(self) -> int:
        """The program's footprint while it runs: every allocation in the default memory (thread-local scratch
        and other memory colours left out); memory_analysis's argument + output + temp - alias (+ constants)."""
        return self._sum(ALLOCATION_KINDS)

    @property
    def argument_bytes(self) -> int:
        """memory_analysis's ``argument_size_in_bytes``: every entry parameter, donated ones included."""
        return self._sum(["parameter"])

    @property
    def output_bytes(self) -> int:
        """memory_analysis's ``output_size_in_bytes``: the outputs, donated parameters they alias included."""
        return self._sum(["output"]) + self.alias_bytes

    @property
    def alias_bytes(self) -> int:
        """Parameters the output reuses (donated): counted once in ``peak_bytes``."""
        return sum(a.size_bytes for a in self.allocations if a.counted and a.kind == "parameter"
                   and a.maybe_live_out)

    @property
    def temp_bytes(self) -> int:
        return self._sum(["temporary"])

    @property
    def constant_bytes(self) -> int:
        return self._sum(["constant"])

    def allocations_frame(self):
        """One row per allocation (pandas): index, kind, size_bytes, parameter_number, maybe_live_out,
        aliased_with_output, thread_local, constant, color, buffers."""
        import pandas as pd

        return pd.DataFrame([{
            "index": a.index, "kind": a.kind, "size_bytes": a.size_bytes,
            "parameter_number": a.parameter_number, "maybe_live_out": a.maybe_live_out,
            "aliased_with_output": a.aliased_with_output, "thread_local": a.is_thread_local,
            "constant": a.is_constant, "color": a.color, "buffers": len(a.buffers)} for a in self.allocations],
            columns=["index", "kind", "size_bytes", "parameter_number", "maybe_live_out", "aliased_with_output",
                     "thread_local", "constant", "color", "buffers"])

    def buffers_frame(self):
        """One row per logical buffer (pandas): allocation, allocation_kind, buffer_id, offset_bytes,
        size_bytes, logical_bytes, padding_bytes, instruction, opcode, computation, shape, dtype, op_name,
        source (``file:line``), live_at_peak (in a heap peak's live set; None where the plan has no trace)."""
        import pandas as pd

        kinds = {a.index: a.kind for a in self.allocations}
        live = {bid for peak in self.heap_peaks.values() for bid in peak.buffer_ids}
        traced = set(self.heap_peaks)
        rows = [{
            "allocation": b.allocation, "allocation_kind": kinds[b.allocation], "buffer_id": b.id,
            "offset_bytes": b.offset_bytes, "size_bytes": b.size_bytes, "logical_bytes": b.logical_bytes,
            "padding_bytes": b.padding_bytes, "instruction": b.instruction, "opcode": b.opcode,
            "computation": b.computation, "shape": b.shape.text, "dtype": b.dtype, "op_name": b.op_name,
            "source": b.source, "live_at_peak": (b.id in live) if b.allocation in traced else None}
            for a in self.allocations for b in a.buffers]
        return pd.DataFrame(rows, columns=["allocation", "allocation_kind", "buffer_id", "offset_bytes", "size_bytes",
                                           "logical_bytes", "padding_bytes", "instruction", "opcode", "computation",
                                           "shape", "dtype", "op_name", "source", "live_at_peak"])

    def summary(self) -> dict[str, Any]:
        return {"module": self.module_name, "program_id": self.program_id, "peak_bytes": self.peak_bytes,
                "argument_bytes": self.argument_bytes, "output_bytes": self.output_bytes,
                "alias_bytes": self.alias_bytes, "temp_bytes": self.temp_bytes,
                "constant_bytes": self.constant_bytes, "allocations": len(self.allocations),
                "buffers": sum(len(a.buffers) for a in self.allocations)}


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
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            proto = message_class("HloProto").FromString(bytes(data))
        except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError
            raise PlanError(f"the HloProto of {event_name or 'a program'} does not decode: {exc}") from exc
    else:
        proto = data
    if not proto.HasField("buffer_assignment") or not proto.buffer_assignment.buffer_allocations:
        raise PlanError(f"the HloProto of {event_name or proto.hlo_module.name or 'a program'} has no buffer "
                        "assignment (the capture kept the module only)")
    module = proto.hlo_module
    frames = _Frames(module.stack_frame_index)
    instructions: dict[int, Instruction] = {}
    computation_ids = {c.name: c.id for c in module.computations}
    root_ids = {c.name: c.root_id for c in module.computations}
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
    by_name = {i.name: i for i in instructions.values()}
    assignment = proto.buffer_assignment
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

    allocations = []
    for a in assignment.buffer_allocations:
        if a.is_thread_local:
            kind = "thread-local"
        elif a.is_entry_computation_parameter:
            kind = "parameter"
        elif a.is_constant:
            kind = "constant"
        elif a.maybe_live_out:
            kind = "output"
        else:
            kind = "temporary"
        allocations.append(Allocation(
            index=a.index, size_bytes=a.size, kind=kind, buffers=tuple(buffer(x, a.index) for x in a.assigned),
            parameter_number=a.parameter_number if a.is_entry_computation_parameter else None,
            parameter_shape_index=tuple(a.parameter_shape_index), maybe_live_out=a.maybe_live_out,
            aliased_with_output=a.is_parameter_aliased_with_output or (a.is_entry_computation_parameter
                                                                      and a.maybe_live_out),
            is_thread_local=a.is_thread_local, is_constant=a.is_constant, is_tuple=a.is_tuple, color=a.color))
    sizes = {lb.id: lb.size for lb in assignment.logical_buffers}
    heap_peaks: dict[int, HeapPeak] = {}
    allocation_of = {b.id: a.index for a in allocations for b in a.buffers}
    for trace in assignment.heap_simulator_traces:
        peak = _heap_peak(trace, sizes, allocation_of)
        if peak is not None and (peak.allocation not in heap_peaks
                                 or peak.live_bytes > heap_peaks[peak.allocation].live_bytes):
            heap_peaks[peak.allocation] = peak
    program = module.host_program_shape
    aliases = tuple((e.parameter_number, tuple(e.parameter_shape_index), tuple(e.output_shape_index))
                    for e in module.input_output_alias.entries)
    devices = module.device_assignment
    return ProgramPlan(
        module_name=module.name, program_id=program_id, entry_computation=module.entry_computation_name,
        allocations=allocations, instructions=instructions, heap_peaks=heap_peaks,
        parameter_names=tuple(program.parameter_names), io_aliases=aliases,
        partitions=max(1, devices.computation_count), replicas=max(1, devices.replica_count),
        result_shape=_shape(program.result) if program.HasField("result") else None,
        parameter_shapes=tuple(_shape(s) for s in program.parameters), event_name=event_name or module.name,
        computation_ids=computation_ids, root_ids=root_ids, fused_op_names=tuple(sorted(set(fused_op_names))))


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


# --- the capture side ---------------------------------------------------------------------------------------

_EVENT_NAME = re.compile(r"^(?P<name>.*?)\((?P<id>\d+)\)$")


def split_event_name(name: str) -> tuple[str, int | None]:
    """``jit_f(6)`` -> (``jit_f``, 6); a name without the id -> (name, None)."""
    match = _EVENT_NAME.match(name)
    return (match["name"], int(match["id"])) if match else (name, None)


def _planes(source: str | bytes) -> Iterable[Any]:
    """The planes of an XSpace (a local path or its bytes), each with ``name``, ``event_metadata``,
    ``stat_metadata`` and ``lines`` (bytes of each XLine, parsed by the caller)."""
    from tpudoctor.profile.schema import message_class as xplane_class

    if isinstance(source, (bytes, bytearray, memoryview)):
        yield from xplane_class("XSpace", raw=True).FromString(bytes(source)).planes
        return
    import os

    from tpudoctor.profile.xspace.planes_on_disk import layout, planes_on_disk

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
    from tpudoctor.profile.schema import message_class as xplane_class

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
