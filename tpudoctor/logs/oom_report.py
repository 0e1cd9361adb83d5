"""What an out-of-memory report says, as dataclasses: the header, usage blocks, program allocations, reservation
and allocation failures, the compiler's early abort, ``compiled.memory_analysis()``'s stats, and the
``Reconciliation`` of each listing with its own header (sizes are read by ``tpudoctor.logs.sizes``).
``tpudoctor.logs.oom`` fills them from the text."""

from __future__ import annotations

import dataclasses
import math

from tpudoctor.logs.sizes import SIZE_PATTERN, UNITS, Size, UnreadableSize, parse_size  # noqa: F401 - the one reader

TOLERANCE = 0.01  # a listing's total within 1 % of its header

# bytes per element of XLA's primitive types (sub-byte types packed)
ELEMENT_BYTES = {
    "pred": 1, "s2": 0.25, "u2": 0.25, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "u32": 4,
    "s64": 8, "u64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16, "f4e2m1fn": 0.5,
    "f8e5m2": 1, "f8e4m3fn": 1, "f8e4m3b11fnuz": 1, "f8e5m2fnuz": 1, "f8e4m3fnuz": 1, "f8e4m3": 1, "f8e3m4": 1,
    "f8e8m0fnu": 1,
}


@dataclasses.dataclass(frozen=True)
class Reconciliation:
    """A listing against its own header: ``listed_bytes`` (what its items add up to) against
    ``header_bytes``; ``ok`` within ``tolerance_bytes`` (1 % of the header, or the rounding of the
    printed figures where that is more)."""

    what: str
    header_bytes: int
    listed_bytes: int
    tolerance_bytes: int

    @property
    def difference_bytes(self) -> int:
        return self.listed_bytes - self.header_bytes

    @property
    def difference_share(self) -> float:
        return self.difference_bytes / self.header_bytes if self.header_bytes else 0.0

    @property
    def ok(self) -> bool:
        return abs(self.difference_bytes) <= self.tolerance_bytes


def reconcile(what: str, header: Size, listed: list[Size], *, exact: bool = False) -> Reconciliation:
    slack = 0 if exact else header.slack + sum(item.slack for item in listed)
    return Reconciliation(what, header.bytes, sum(item.bytes for item in listed),
                          max(int(TOLERANCE * abs(header.bytes)), slack))


@dataclasses.dataclass(frozen=True)
class OomHeader:
    """``Ran out of memory in memory space hbm. Used X of Y hbm. Exceeded hbm capacity by Z.``, JAX's ``Ran out of
    memory on HBM, the total memory required for HLO temporaries (X) exceeds available HBM (Y).``, or libtpu's
    ``TPU TensorCore Hbm usage: X, SparseCore Hbm usage Y, exceeding available bytes: Z`` (used: their sum). The
    figures are None where the line names the memory space and no figure (``Ran out of memory in memory space vmem.``,
    ``... vmem while allocating on stack for %op = shape ...``)."""

    memory_space: str
    used_bytes: int | None
    capacity_bytes: int | None
    exceeded_bytes: int | None
    at_compile: bool
    """XLA refused to compile (``compile permanent error``, ``Compilation failure``), not a run-time failure."""
    status: str | None
    """``RESOURCE_EXHAUSTED`` (or TF's ``Resource exhausted``) where the line says it."""
    error_code: str | None
    """libtpu's code where printed, e.g. ``E1000: CompileTimeHbmOom``."""
    line: str


@dataclasses.dataclass(frozen=True)
class UsageItem:
    """One line of a usage block: ``program          40.83G``; ``bytes`` None for ``unknown size``."""

    name: str
    bytes: int | None
    detail: str
    """What follows the size on its line, e.g. ``(89.4% utilization)``."""
    utilization_percent: float | None = None
    unpadded_bytes: int | None = None
    padded_bytes: int | None = None
    fragmentation_percent: float | None = None
    fragmentation_bytes: int | None = None


@dataclasses.dataclass(frozen=True)
class UsageBlock:
    """A titled block of usage items: ``Total hbm usage >= X``, ``Program hbm requirement X``,
    ``Heap allocator status``, ``Persistent allocations include some or all of``."""

    kind: str
    """``total``, ``program``, ``heap_status``, ``persistent`` or ``buffer_assignment`` (XLA GPU's
    ``BufferAssignment stats``: its ``total allocation`` is the total, the other ``* allocation`` lines its items)."""
    title: str
    memory_space: str | None
    total_bytes: int | None
    at_least: bool
    """The total is a lower bound (``>=``)."""
    items: tuple[UsageItem, ...]

    def item(self, name: str) -> UsageItem | None:
        """The first item whose name starts with ``name`` (``reserved`` finds ``reserved(Infeed/...)``)."""
        return next((item for item in self.items if item.name.startswith(name)), None)


@dataclasses.dataclass(frozen=True)
class OutputSize:
    """``Output size 0B; shares 0B with arguments.`` (None: ``unknown``)."""

    bytes: int | None
    shared_with_arguments_bytes: int | None


@dataclasses.dataclass(frozen=True)
class ProgramAllocation:
    """One entry of ``Largest program allocations in <space>`` (or of XLA GPU's ``Peak buffers``, space
    ``device``; an ``Entry Parameter Subshape`` there is its shape, allocation type ``parameter``)."""

    rank: int
    memory_space: str
    size_bytes: int | None
    shape: str | None
    dtype: str | None
    dims: tuple[int, ...] | None
    unpadded_bytes: int | None
    padding_bytes: int | None
    padding_expansion: float | None
    op_type: str | None
    op_name: str | None
    source_file: str | None
    source_line: int | None
    xla_label: str | None
    allocation_type: str | None

    @property
    def source(self) -> str | None:
        """``file:line`` of the framework op that made the buffer, where XLA kept it."""
        if self.source_file is None:
            return None
        return f"{self.source_file}:{self.source_line}" if self.source_line is not None else self.source_file

    @property
    def shape_bytes(self) -> int | None:
        """The buffer's bytes from its shape, unpadded (None for tuples and unknown element types)."""
        if self.dims is None or self.dtype not in ELEMENT_BYTES:
            return None
        return int(math.ceil(math.prod(self.dims) * ELEMENT_BYTES[self.dtype]))


@dataclasses.dataclass(frozen=True)
class ReservationFailure:
    """``Attempting to reserve X at the bottom of memory. That was not possible. There are F free,
    R reserved, and V reservable.`` and its ``HBM capacity`` table (exact bytes where printed)."""

    requested_bytes: int
    free_bytes: int | None
    reserved_bytes: int | None
    reservable_bytes: int | None
    capacity_bytes: int | None
    table: dict[str, int]
    """``HBM capacity`` table rows by name (``Top-of-Memory reserved``, ``Currently allocated``,
    ``Program requirement``, ``Available after request``), in bytes."""


@dataclasses.dataclass(frozen=True)
class AllocationFailure:
    """``Attempting to allocate X. That was not possible. There are F free.`` (run time); XLA GPU's ``Out of memory
    while trying to allocate N bytes.``; the PjRt runtime's ``Failed to allocate request for X (NB) on device ordinal
    N``; TensorFlow's ``OOM when allocating tensor with shape[...] and type T on DEVICE by allocator A`` (its tensor
    is the report's allocation)."""

    requested_bytes: int | None
    """None where the text names the tensor and not its bytes (TensorFlow's ``OOM when allocating tensor with
    shape[...]`` without its type)."""
    free_bytes: int | None
    largest_free_bytes: int | None
    """``Due to fragmentation, the largest contiguous region of free memory is N``."""
    device: str | None
    """The memory it names, e.g. ``0x0x0_HBM0``."""


@dataclasses.dataclass(frozen=True)
class EarlyAbort:
    """``Compilation failure: Aborting compilation early because it's unlikely to have enough [device ]memory.
    Requires 3.47E, has 14.49G available.``: the compiler's estimate before it lays the program out, so no
    listing follows (jax-ml/jax#7822)."""

    required_bytes: int
    available_bytes: int


COMPILED_STATS_FIELDS = (
    "generated_code_size_in_bytes", "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
    "temp_size_in_bytes", "host_generated_code_size_in_bytes", "host_argument_size_in_bytes",
    "host_output_size_in_bytes", "host_alias_size_in_bytes", "host_temp_size_in_bytes", "peak_memory_in_bytes",
)


@dataclasses.dataclass(frozen=True)
class CompiledMemoryStats:
    """``compiled.memory_analysis()`` as printed: every ``*_in_bytes`` field (``fields``)."""

    fields: dict[str, int]

    def get(self, name: str) -> int | None:
        return self.fields.get(name)

    @property
    def device_bytes(self) -> int:
        """Device memory the executable needs: arguments + outputs - aliased + temporaries + code."""
        f = self.fields
        return (f.get("argument_size_in_bytes", 0) + f.get("output_size_in_bytes", 0)
                - f.get("alias_size_in_bytes", 0) + f.get("temp_size_in_bytes", 0)
                + f.get("generated_code_size_in_bytes", 0))

    @property
    def host_bytes(self) -> int:
        f = self.fields
        return (f.get("host_argument_size_in_bytes", 0) + f.get("host_output_size_in_bytes", 0)
                - f.get("host_alias_size_in_bytes", 0) + f.get("host_temp_size_in_bytes", 0)
                + f.get("host_generated_code_size_in_bytes", 0))


@dataclasses.dataclass
class OomReport:
    """One out-of-memory report (or the parts of one a log holds), its ``reconciliations``."""

    header: OomHeader | None = None
    total: UsageBlock | None = None
    output: OutputSize | None = None
    program: UsageBlock | None = None
    heap_status: UsageBlock | None = None
    persistent: UsageBlock | None = None
    buffer_assignment: UsageBlock | None = None
    allocations: list[ProgramAllocation] = dataclasses.field(default_factory=list)
    reservation: ReservationFailure | None = None
    allocation_failure: AllocationFailure | None = None
    early_abort: EarlyAbort | None = None
    reconciliations: list[Reconciliation] = dataclasses.field(default_factory=list)

    @property
    def problems(self) -> list[Reconciliation]:
        """The listings whose items do not add up to their own header."""
        return [r for r in self.reconciliations if not r.ok]

    @property
    def listed_allocation_bytes(self) -> int:
        return sum(a.size_bytes or 0 for a in self.allocations)
