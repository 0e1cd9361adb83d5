"""The compiler's buffer plan: each program's allocations and the logical buffers in them (``ProgramPlan``).

A plan's allocations are what the program holds while it runs: the entry parameters, the outputs
(``maybe_live_out``), the temporary heap, constants and thread-local scratch. Their sizes add up to what
``jax.stages.Compiled.memory_analysis()`` reports (argument + output + temp - alias). The heap simulator's trace
(``heap_simulator_traces``), where present, says which logical buffers share the temporary allocation at its
peak; ``HeapPeak`` is that moment.

``captures.hlo.decode_hlo_proto`` builds a plan from one ``HloProto``; ``memory.plan_capture`` finds them in an
XSpace capture (``plans_from_xspace``) and says when each program ran (``program_runs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from functools import cached_property
from typing import Any

from tpudoctor.captures.hlo_shapes import Shape, Sharding

ALLOCATION_KINDS = ("parameter", "output", "temporary", "constant", "thread-local")
"""What an allocation holds: an entry parameter (``parameter``; one also live out is a donated parameter), the
program's result (``output``: ``maybe_live_out``), the temporary heap, constants, thread-local scratch."""

DEFAULT_MEMORY_COLOR = 0
"""The memory space the peak counts (HBM on TPU and GPU, RAM on CPU); other colours are alternate memory (VMEM,
pinned host) and are listed, not counted."""


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
