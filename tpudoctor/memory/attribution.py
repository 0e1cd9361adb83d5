"""Every byte of a program's peak in a named bucket: what fills memory while the program runs.

The peak of a program is its allocations (``ProgramPlan.peak_bytes``: parameters, outputs, the temporary heap,
constants; memory_analysis's argument + output + temp - alias, plus constants). Each allocation's bytes go to:

``parameters`` / ``optimizer_state``
    Entry parameters. A parameter is optimizer state when the caller names its number, or its name (JAX records
    the argument's path as the parameter's ``op_name``: ``opt_state[0].mu['w']``, ``nu['w']``) says so
    (``OPTIMIZER_NAME``). Confidence high for named numbers, medium for names.
``outputs``
    The result the program returns (a donated parameter it writes stays under its parameter bucket).
``activations``
    Temporaries live at the heap peak that the forward pass made and the backward pass reads: in a gradient
    program (some ``op_name`` carries JAX's ``transpose(`` or TensorFlow's ``gradients/`` / ``gradient_tape/``),
    a live buffer whose op (``ProgramPlan.op_name_of``: the compiler's copies and loop parameters take their
    source's name) is not a backward op. This rests on JAX's and TensorFlow's op naming: confidence medium; a
    program with no backward op has no activations.
``temporaries``
    The other buffers live at the heap peak.
``padding``
    Bytes a buffer holds beyond its elements (TPU tiling: an f32[N, 3] under T(8,128) holds N/8*8 x 128); taken
    out of whichever bucket the buffer is in. Zero on CPU and GPU, whose layouts have no tiles.
``fragmentation``
    The temporary allocation's bytes no live buffer holds at the heap peak (the simulator's peak live bytes are
    less than the heap it laid out).
``constants``
    Literal arrays the program carries.
``preallocated_unused`` / ``outside_program``
    Only where the caller gives the runtime's figures at the peak (``reserved_bytes``, ``in_use_bytes``): what the
    allocator reserved beyond what was in use, and what was in use beyond this program (other arrays held).
``other``
    Bytes no rule above explains (a temporary allocation with neither a heap trace nor offsets).

Without a heap trace, a temporary allocation's bytes are painted by its buffers' offsets (each byte to the
largest buffer placed there; never-used bytes are fragmentation): confidence low.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection
from typing import Any

from tpudoctor.captures.buffer_plan import Allocation, Buffer, ProgramPlan

BUCKETS = ("parameters", "optimizer_state", "outputs", "activations", "temporaries", "padding", "fragmentation",
           "constants", "preallocated_unused", "outside_program", "other")

BACKWARD_OP = re.compile(r"transpose\(|(^|/)gradients/|(^|/)gradient_tape/")
"""A backward-pass op: JAX names reverse-mode ops ``.../transpose(jvp(f))/...``; TensorFlow ``gradients/...``
(graph) or ``gradient_tape/...`` (eager tape)."""

OPTIMIZER_NAME = re.compile(
    r"opt_state|optimizer|optim_state|(?<![a-z])(mu|nu|momentum|momentums|velocity|exp_avg|exp_avg_sq|"
    r"accumulator|accumulators|moment[s12]?|slots?)(?![a-z])", re.IGNORECASE)
"""A parameter name that says optimizer state (optax's ``mu`` / ``nu``, PyTorch-style ``exp_avg``, Keras slots)."""


@dataclasses.dataclass(frozen=True)
class Share:
    """Bytes of one buffer (or allocation remainder) in one bucket."""

    bucket: str
    bytes: int
    allocation: int
    buffer_id: int | None = None
    instruction: str = ""
    shape: str = ""
    dtype: str = ""
    op_name: str = ""
    source: str = ""


@dataclasses.dataclass
class Attribution:
    """A program's peak by bucket (``BUCKETS``), the shares behind each, and how sure each bucket is."""

    program: str
    peak_bytes: int
    """The program's footprint (``ProgramPlan.peak_bytes``)."""
    buckets: dict[str, int]
    shares: list[Share]
    confidence: dict[str, tuple[str, str]]
    """Bucket -> (level: high / medium / low, why)."""
    total_bytes: int
    """All bytes attributed: the footprint, plus ``preallocated_unused`` and ``outside_program`` when given."""
    is_gradient: bool = False
    peak_in_backward: bool | None = None
    peak_instruction: str = ""

    @property
    def named_fraction(self) -> float:
        """Share of ``total_bytes`` in a named bucket (not ``other``)."""
        return 1.0 if not self.total_bytes else 1.0 - self.buckets.get("other", 0) / self.total_bytes

    def shares_in(self, bucket: str) -> list[Share]:
        return [s for s in self.shares if s.bucket == bucket]

    def buffers_in(self, bucket: str) -> set[int]:
        return {s.buffer_id for s in self.shares if s.bucket == bucket and s.buffer_id is not None}

    def frame(self):
        """One row per share (pandas): bucket, bytes, allocation, buffer_id, instruction, shape, dtype, op_name,
        source."""
        import pandas as pd

        return pd.DataFrame([dataclasses.asdict(s) for s in self.shares],
                            columns=[f.name for f in dataclasses.fields(Share)])

    def to_dict(self) -> dict[str, Any]:
        return {"program": self.program, "peak_bytes": self.peak_bytes, "total_bytes": self.total_bytes,
                "buckets_bytes": dict(self.buckets), "named_fraction": round(self.named_fraction, 4),
                "confidence": {k: {"level": v[0], "why": v[1]} for k, v in self.confidence.items()},
                "is_gradient": self.is_gradient, "peak_in_backward": self.peak_in_backward}


def is_backward(op_name: str) -> bool:
    return bool(BACKWARD_OP.search(op_name))


def is_optimizer_name(name: str) -> bool:
    return bool(OPTIMIZER_NAME.search(name))


def parameter_name(plan: ProgramPlan, number: int | None) -> str:
    """A parameter's name: the path JAX records as its ``op_name``, else the program shape's name."""
    if number is None:
        return ""
    for inst in plan.entry_parameters:
        if inst.parameter_number == number and inst.op_name:
            return inst.op_name
    names = plan.parameter_names
    return names[number] if 0 <= number < len(names) else ""


def attribute(plan: ProgramPlan, *, optimizer_parameters: Collection[int] = (), reserved_bytes: int | None = None,
              in_use_bytes: int | None = None) -> Attribution:
    """The plan's peak by bucket; ``optimizer_parameters``: parameter numbers the caller knows hold optimizer
    state; ``reserved_bytes`` / ``in_use_bytes``: the runtime's allocator figures at the memory peak."""
    ledger = _Ledger(plan, set(optimizer_parameters))
    for allocation in plan.allocations:
        if allocation.counted:
            ledger.allocation(allocation)
    total = plan.peak_bytes + ledger.runtime(plan.peak_bytes, reserved_bytes, in_use_bytes)
    buckets = {name: 0 for name in BUCKETS}
    for share in ledger.shares:
        buckets[share.bucket] += share.bytes
    return Attribution(program=plan.event_name, peak_bytes=plan.peak_bytes, buckets=buckets, shares=ledger.shares,
                       confidence=_confidence(ledger.confidence, buckets), total_bytes=total,
                       is_gradient=ledger.is_gradient, peak_in_backward=ledger.peak_in_backward,
                       peak_instruction=ledger.peak_instruction)


def attribute_heap_peak(plan: ProgramPlan, *, optimizer_parameters: Collection[int] = ()) -> Attribution:
    """The peak of a program that compiled, as ``memory_analysis()``'s ``peak_memory_in_bytes`` counts it: the
    parameters, outputs and constants whole, and of the temporaries only the buffers live at the peak of the
    largest temporary heap (padding apart; no fragmentation: a heap's peak is its live bytes). A TPU program has a
    heap in the default memory (colour 0) and one in the memory the compiler's memory-space assignment prefetches
    into (colour 1 on v5e and v6e, 3 on v4); its peak counts the larger, not both.

    Measured on the ten programs of examples/preflight/programs.py and their fitting variants on v4, v5e and v6e
    (benchmarks/preflight_attribution.py, 42 compiles): this sum is ``peak_memory_in_bytes`` to the byte, where all
    the allocations at once run from 1.1 % under it (the other colour's heap is outside the default memory's
    allocations) to 12.3 % over it (a temporary allocation larger than its heap's peak: transformer_block in bf16 on
    v4). Without a heap trace: ``attribute``."""
    ledger = _Ledger(plan, set(optimizer_parameters))
    heaps = [(peak, plan.allocations_by_index[index]) for index, peak in plan.heap_peaks.items()
             if index in plan.allocations_by_index]
    heaps = [(peak, a) for peak, a in heaps if a.kind == "temporary" and not a.is_thread_local]
    if not heaps:
        return attribute(plan, optimizer_parameters=optimizer_parameters)
    for allocation in plan.allocations:
        if allocation.counted and allocation.kind != "temporary":
            ledger.allocation(allocation)
    peak, heap = max(heaps, key=lambda pair: (pair[0].live_bytes, -pair[1].color))
    ledger.live_buffers(heap, peak, peak.live_bytes, "other")
    ledger.confidence["temporaries"] = (
        "high", f"buffers live at the peak of the temporary heap (colour {heap.color}) the compiler's peak counts")
    buckets = {name: 0 for name in BUCKETS}
    for share in ledger.shares:
        buckets[share.bucket] += share.bytes
    total = sum(buckets.values())
    return Attribution(program=plan.event_name, peak_bytes=total, buckets=buckets, shares=ledger.shares,
                       confidence=_confidence(ledger.confidence, buckets), total_bytes=total,
                       is_gradient=ledger.is_gradient, peak_in_backward=ledger.peak_in_backward,
                       peak_instruction=ledger.peak_instruction)


class _Ledger:
    """The shares of one plan as they are added, with what each bucket's confidence rests on."""

    def __init__(self, plan: ProgramPlan, optimizer_parameters: set[int]):
        self.plan, self.optimizer_parameters = plan, optimizer_parameters
        self.shares: list[Share] = []
        self.confidence: dict[str, tuple[str, str]] = {}
        self.is_gradient = any(is_backward(i.op_name) for i in plan.instructions.values()) or any(
            is_backward(name) for name in plan.fused_op_names)
        self.peak_in_backward: bool | None = None
        self.peak_instruction = ""

    def add(self, bucket: str, amount: int, allocation: Allocation, buffer: Buffer | None = None) -> None:
        if amount <= 0:
            return
        if buffer is None:
            self.shares.append(Share(bucket, amount, allocation.index))
            return
        self.shares.append(Share(bucket, amount, allocation.index, buffer.id, buffer.instruction, buffer.shape.text,
                                 buffer.dtype, self.plan.op_name_of(buffer), buffer.source))

    def add_buffer(self, bucket: str, amount: int, allocation: Allocation, buffer: Buffer) -> None:
        padding = min(amount, buffer.padding_bytes)
        self.add("padding", padding, allocation, buffer)
        self.add(bucket, amount - padding, allocation, buffer)

    def add_whole(self, bucket: str, allocation: Allocation) -> None:
        """An allocation one value fills: its largest buffer's padding, the rest to ``bucket``."""
        largest = max(allocation.buffers, key=lambda b: b.size_bytes, default=None)
        if largest is None:
            self.add(bucket, allocation.size_bytes, allocation)
            return
        padding = min(allocation.size_bytes, largest.padding_bytes)
        self.add("padding", padding, allocation, largest)
        self.add(bucket, allocation.size_bytes - padding, allocation, largest)

    def allocation(self, allocation: Allocation) -> None:
        if allocation.kind == "parameter":
            self.parameter(allocation)
        elif allocation.kind in ("output", "constant"):
            self.add_whole(allocation.kind + "s", allocation)
        elif allocation.kind == "temporary":
            self.temporary(allocation)
        else:
            self.add("other", allocation.size_bytes, allocation)

    def parameter(self, allocation: Allocation) -> None:
        named = allocation.parameter_number in self.optimizer_parameters
        by_name = is_optimizer_name(parameter_name(self.plan, allocation.parameter_number))
        if named:
            self.confidence["optimizer_state"] = ("high", "the caller named these parameters optimizer state")
        elif by_name:
            self.confidence.setdefault("optimizer_state", (
                "medium", "parameter names (JAX records the argument path) say optimizer state: opt_state, mu, "
                          "nu, momentum"))
        self.add_whole("optimizer_state" if named or by_name else "parameters", allocation)

    def temporary(self, allocation: Allocation) -> None:
        """The buffers live at the heap simulator's peak, the rest fragmentation; painted by offsets without it."""
        plan = self.plan
        peak = plan.heap_peaks.get(allocation.index)
        if peak is None:
            _paint(allocation, self.add_buffer, self.add)
            self.confidence["temporaries"] = ("low", "no heap-simulator trace: the temporary allocation is split by "
                                                     "its buffers' offsets, not by what was live at its peak")
            return
        self.live_buffers(allocation, peak, allocation.size_bytes, "fragmentation")

    def live_buffers(self, allocation: Allocation, peak, frame_bytes: int, rest: str) -> None:
        """The buffers live at ``peak`` (activations or temporaries, their padding apart), up to ``frame_bytes``;
        what they leave of it to ``rest``."""
        plan = self.plan
        self.peak_instruction = self.peak_instruction or peak.instruction
        at = plan.by_name.get(peak.instruction)
        if at is not None and self.peak_in_backward is None:
            origin = plan.origin(at)
            self.peak_in_backward = is_backward(origin.op_name if origin else at.op_name)
        held = 0
        for bid in peak.buffer_ids:
            buffer = plan.buffers.get(bid)
            if buffer is None:
                continue
            size = min(buffer.size_bytes, frame_bytes - held)
            held += size
            forward = not is_backward(plan.op_name_of(buffer))
            self.add_buffer("activations" if self.is_gradient and forward else "temporaries", size, allocation,
                            buffer)
        self.add(rest, frame_bytes - held, allocation)

    def runtime(self, footprint: int, reserved_bytes: int | None, in_use_bytes: int | None) -> int:
        """The allocator's bytes beyond the plan (reserved unused, in use outside the program); what they add."""
        extra = 0
        if reserved_bytes is not None and in_use_bytes is not None and reserved_bytes > in_use_bytes:
            self.shares.append(Share("preallocated_unused", reserved_bytes - in_use_bytes, -1))
            extra += reserved_bytes - in_use_bytes
            self.confidence["preallocated_unused"] = (
                "high", "the runtime's reserved bytes beyond those in use at the peak")
        if in_use_bytes is not None and in_use_bytes > footprint:
            self.shares.append(Share("outside_program", in_use_bytes - footprint, -1))
            extra += in_use_bytes - footprint
            self.confidence["outside_program"] = (
                "medium", "bytes in use at the peak beyond this program's plan: arrays held outside it (another "
                          "program's, a cache, a second copy)")
        return extra


def _confidence(found: dict[str, tuple[str, str]], buckets: dict[str, int]) -> dict[str, tuple[str, str]]:
    """What the shares said, and what each bucket rests on where they said nothing."""
    confidence = dict(found)
    confidence.setdefault("parameters", ("high", "entry parameter allocations of the buffer assignment"))
    confidence.setdefault("outputs", ("high", "maybe-live-out allocations of the buffer assignment"))
    if buckets["activations"]:
        confidence["activations"] = (
            "medium", "forward-pass buffers live at the heap peak of a gradient program (JAX's transpose( / "
                      "TensorFlow's gradients/ op names tell backward ops)")
    confidence.setdefault("temporaries", ("high", "buffers live at the heap simulator's peak"))
    confidence.setdefault("fragmentation", ("high", "the temporary allocation less the heap simulator's peak "
                                                    "live bytes"))
    confidence.setdefault("padding", ("high", "buffer sizes beyond their elements' bytes"))
    return confidence


def _paint(allocation: Allocation, add_buffer, add) -> None:
    """Split an allocation without a heap trace by offsets: each byte range to the largest buffer placed on it;
    ranges no buffer covers are fragmentation."""
    buffers = sorted((b for b in allocation.buffers if b.size_bytes > 0), key=lambda b: -b.size_bytes)
    if not buffers:
        add("other", allocation.size_bytes, allocation)
        return
    cuts = sorted({0, allocation.size_bytes, *(b.offset_bytes for b in buffers),
                   *(min(allocation.size_bytes, b.offset_bytes + b.size_bytes) for b in buffers)})
    owned: dict[int, int] = {}
    free = 0
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        if hi <= lo:
            continue
        owner = next((b for b in buffers if b.offset_bytes <= lo and hi <= b.offset_bytes + b.size_bytes), None)
        if owner is None:
            free += hi - lo
        else:
            owned[owner.id] = owned.get(owner.id, 0) + hi - lo
    for buffer in buffers:
        if buffer.id in owned:
            add_buffer("temporaries", owned[buffer.id], allocation, buffer)
    add("fragmentation", free, allocation)
