"""The out-of-memory reports XLA and libtpu print, and ``compiled.memory_analysis()``, as dataclasses.

    from tpudoctor.memory.oom_text import parse_oom_reports
    for report in parse_oom_reports(log_text):
        report.header.used_bytes, report.allocations[0].op_name, report.problems

The text forms (a report is any run of them; each is found on its own too, since logs often hold
an excerpt or print the report's lines as separate log lines):

* the header: ``[RESOURCE_EXHAUSTED: ][E1000: CompileTimeHbmOom: ][XLA:TPU compile permanent error. |
  Compilation failure: ]Ran out of memory in memory space hbm. Used 40.83G of 30.75G hbm.
  Exceeded hbm capacity by 10.08G.``
* ``Total hbm usage >= 41.33G:`` then its items (``reserved``, ``program``, ``arguments`` -
  ``unknown size`` where XLA does not know it -, or at run time ``reserved(Infeed/Outfeed/
  Continuations)``, ``heap allocations (without fragmentation)``, ``program``); ``Output size 0B;
  shares 0B with arguments.``; ``Heap allocator status:`` and ``Persistent allocations include some
  or all of:`` (run time).
* ``Program hbm requirement 40.83G:`` then ``reserved``, ``global``, ``scoped``, ``HLO temp`` (with
  ``(N% utilization: Unpadded (X) Padded (Y), F% fragmentation (Z))``).
* ``Largest program allocations in hbm:`` then ``N. Size: X`` entries: ``Operator: op_type=...
  op_name=... source_file=... source_line=N``, ``Shape: f32[8,32768,8192]{2,1,0:T(8,128)}``,
  ``Unpadded size:``, ``Extra memory due to padding: X (Nx expansion)``, ``XLA label:``,
  ``Allocation type:``.
* run time: ``Attempting to reserve 3.95G at the bottom of memory. That was not possible. There are
  1.92G free, 0B reserved, and 1.92G reservable.`` with its ``HBM capacity 8.00G:`` table (exact
  bytes in parentheses), and ``Attempting to allocate 31.06M. That was not possible. There are
  58.64M free. Due to fragmentation, the largest contiguous region of free memory is 30.56M.``
* XLA GPU (run time): ``Out of memory while trying to allocate 6291456 bytes.`` then ``BufferAssignment OOM
  Debugging.``, ``BufferAssignment stats:`` (``parameter allocation:    6.00MiB``, ``constant``, ``maybe_live_out``,
  ``preallocated temp``, ``total allocation``, ``total fragmentation:  0B (0.00%)``) and ``Peak buffers:`` with
  ``Buffer N:`` entries (``Size:``, ``Operator:``, ``XLA Label:``, ``Shape:`` or ``Entry Parameter Subshape:``).
* ``CompiledMemoryStats(generated_code_size_in_bytes=..., argument_size_in_bytes=..., ...)``: what
  ``print(jax.jit(f).lower(...).compile().memory_analysis())`` writes (one line, or one field a line).

Sizes are XLA's human-readable bytes (``530.00M``: 1024-based, rounded to the digits shown).
Every listing is reconciled with its own header (``Reconciliation``): the items of a usage block
sum to its total, an allocation's unpadded size and padding to its size, its shape's bytes to its
unpadded size, capacity plus excess to the used bytes...; within 1 % of the header, or within the
rounding of the figures printed where that is more. ``OomReport.problems`` lists those that are not.
"""

from __future__ import annotations

import dataclasses
import math
import re

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
TOLERANCE = 0.01  # a listing's total within 1 % of its header

# bytes per element of XLA's primitive types (sub-byte types packed)
ELEMENT_BYTES = {
    "pred": 1, "s2": 0.25, "u2": 0.25, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "u32": 4,
    "s64": 8, "u64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16, "f4e2m1fn": 0.5,
    "f8e5m2": 1, "f8e4m3fn": 1, "f8e4m3b11fnuz": 1, "f8e5m2fnuz": 1, "f8e4m3fnuz": 1, "f8e4m3": 1, "f8e3m4": 1,
    "f8e8m0fnu": 1,
}

_SIZE = r"-?[0-9]+(?:\.[0-9]+)?\s*[KMGTPE]?(?:i?B)?"
_SIZE_RE = re.compile(r"^(-?[0-9]+(?:\.([0-9]+))?)\s*([KMGTPE]?)(?:i?B)?$")


@dataclasses.dataclass(frozen=True)
class Size:
    """A printed size: its bytes and how far the printed digits can be from the real figure."""

    bytes: int
    slack: int
    text: str

    @classmethod
    def parse(cls, text: str) -> Size:
        match = _SIZE_RE.match(text.strip())
        if match is None:
            raise ValueError(f"not a byte size: {text!r}")
        unit = UNITS[match.group(3)]
        decimals = len(match.group(2) or "")
        value = float(match.group(1)) * unit
        return cls(int(round(value)), int(math.ceil(0.5 * unit / 10**decimals)) if unit > 1 else 0, text.strip())


def parse_size(text: str) -> int:
    """XLA's human-readable size (``40.83G``, ``256.0K``, ``0B``, ``-2.55G``, ``2.5GiB``) as bytes (1024-based)."""
    return Size.parse(text).bytes


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


def _reconcile(what: str, header: Size, listed: list[Size], *, exact: bool = False) -> Reconciliation:
    slack = 0 if exact else header.slack + sum(item.slack for item in listed)
    return Reconciliation(what, header.bytes, sum(item.bytes for item in listed),
                          max(int(TOLERANCE * abs(header.bytes)), slack))


@dataclasses.dataclass(frozen=True)
class OomHeader:
    """``Ran out of memory in memory space hbm. Used X of Y hbm. Exceeded hbm capacity by Z.``"""

    memory_space: str
    used_bytes: int
    capacity_bytes: int
    exceeded_bytes: int
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
    """``Attempting to allocate X. That was not possible. There are F free.`` (run time); or XLA GPU's
    ``Out of memory while trying to allocate N bytes.`` (exact bytes, nothing free said)."""

    requested_bytes: int
    free_bytes: int | None
    largest_free_bytes: int | None
    """``Due to fragmentation, the largest contiguous region of free memory is N``."""
    device: str | None
    """The memory it names, e.g. ``0x0x0_HBM0``."""


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
    reconciliations: list[Reconciliation] = dataclasses.field(default_factory=list)

    @property
    def problems(self) -> list[Reconciliation]:
        """The listings whose items do not add up to their own header."""
        return [r for r in self.reconciliations if not r.ok]

    @property
    def listed_allocation_bytes(self) -> int:
        return sum(a.size_bytes or 0 for a in self.allocations)


# --- the forms ---------------------------------------------------------------------------------------------------

_HEADER = re.compile(
    r"(?:(?P<status>RESOURCE_EXHAUSTED|Resource exhausted):\s*)?"
    r"(?:(?P<code>E\d+:\s*\w+):\s*)?"
    r"(?:(?P<compile>XLA:\w+ compile permanent error\.|Compilation failure:)\s*)?"
    r"(?:From /job:\S+\s*)?"
    r"Ran out of memory in\s+memory space (?P<space>\w+)\.\s*Used (?P<used>" + _SIZE + r") of (?P<capacity>"
    + _SIZE + r") (?P=space)\.\s*Exceeded (?P=space) capacity by (?P<exceeded>" + _SIZE + r")\.?")
_BLOCK_TITLE = re.compile(
    r"^[ \t]*(?:(?P<total>Total (?P<tspace>\w+) usage >= (?P<tsize>" + _SIZE + r"))"
    r"|(?P<program>Program (?P<pspace>\w+) requirement (?P<psize>" + _SIZE + r"))"
    r"|(?P<heap>Heap allocator status)|(?P<persistent>Persistent allocations include some or all of)):[ \t]*$",
    re.MULTILINE)
_ITEM = re.compile(r"^[ \t]+(?P<name>\S.*?)[ \t]+(?P<size>" + _SIZE + r"|unknown size)(?P<rest>(?:[ \t].*)?)$")
_HLO_DETAIL = re.compile(
    r"\((?P<util>[0-9.]+)% utilization(?::\s*Unpadded \((?P<unpadded>" + _SIZE + r")\)\s*Padded \((?P<padded>"
    + _SIZE + r")\))?,\s*(?P<frag>[0-9.]+)% fragmentation \((?P<fragb>" + _SIZE + r")\)\)")
_UTILIZATION = re.compile(r"\((?P<util>[0-9.]+)% (?:utilization|fragmentation)\)")
_OUTPUT = re.compile(r"^[ \t]*Output size (?:(?P<size>" + _SIZE + r"); shares (?P<shared>" + _SIZE
                     + r") with arguments|unknown)\.", re.MULTILINE)
_LARGEST = re.compile(r"^[ \t]*Largest program allocations in (?P<space>\w+):[ \t]*$", re.MULTILINE)
_ENTRY = re.compile(r"^[ \t]*(?P<rank>\d+)\.[ \t]+Size:[ \t]*(?P<size>" + _SIZE + r")[ \t]*$", re.MULTILINE)
_FIELDS = {
    "operator": re.compile(r"^[ \t]*Operator:[ \t]*(\S.*)$", re.MULTILINE),
    "shape": re.compile(r"^[ \t]*Shape:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
    "unpadded": re.compile(r"^[ \t]*Unpadded size:[ \t]*(" + _SIZE + r")", re.MULTILINE),
    "padding": re.compile(r"^[ \t]*Extra memory due to padding:[ \t]*(" + _SIZE + r")(?:[ \t]*\(([0-9.]+)x expansion\))?",
                          re.MULTILINE),
    "label": re.compile(r"^[ \t]*XLA label:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
    "type": re.compile(r"^[ \t]*Allocation type:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
}
_OPERATOR_ATTR = re.compile(r'(op_type|op_name|source_file|source_line)=(?:"((?:[^"\\]|\\.)*)"|(\S+))')
_SHAPE = re.compile(r"^(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[0-9,]*)\]")
_RESERVE = re.compile(
    r"Attempting to reserve (?P<req>" + _SIZE + r") at the bottom of memory\. That was not possible\."
    r"(?:\s*There are (?P<free>" + _SIZE + r") free, (?P<reserved>" + _SIZE + r") reserved, and (?P<reservable>"
    + _SIZE + r") reservable\.)?")
_CAPACITY = re.compile(r"^[ \t]*(?P<space>\w+) capacity (?P<size>" + _SIZE + r"):[ \t]*$", re.MULTILINE)
_CAPACITY_ROW = re.compile(r"^[ \t]*(?P<name>[A-Za-z][A-Za-z -]*?):[ \t]*(?P<size>" + _SIZE
                           + r")[ \t]*(?:\([ \t]*(?P<exact>-?[0-9,]+) bytes\))?[ \t]*$")
_ALLOCATE = re.compile(
    r"Attempting to allocate (?P<req>" + _SIZE + r")\. That was not possible\.(?:\s*There are (?P<free>" + _SIZE
    + r") free\.)?(?:\s*Due to fragmentation, the largest contiguous region of free memory is (?P<largest>" + _SIZE
    + r")\.)?(?:;?\s*\((?P<device>[^)\s]+)\))?")
_GPU_ALLOCATE = re.compile(r"Out of\s+memory while trying to allocate (?P<req>\d+) bytes\.?")
_BUFFER_STATS = re.compile(r"^[ \t]*BufferAssignment stats:[ \t]*$", re.MULTILINE)
_BUFFER_STAT = re.compile(r"^[ \t]+(?P<name>[\w ]+?):[ \t]+(?P<size>" + _SIZE + r")(?P<rest>(?:[ \t].*)?)$")
_PEAK = re.compile(r"^[ \t]*Peak buffers:[ \t]*$", re.MULTILINE)
_BUFFER = re.compile(r"^[ \t]*Buffer (?P<rank>\d+):[ \t]*$", re.MULTILINE)
_BUFFER_FIELDS = {
    "size": re.compile(r"^[ \t]*Size:[ \t]*(" + _SIZE + r")[ \t]*$", re.MULTILINE),
    "operator": _FIELDS["operator"],
    "shape": re.compile(r"^[ \t]*(Shape|Entry Parameter Subshape):[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
    "label": re.compile(r"^[ \t]*XLA Label:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
}
_STATS = re.compile(r"CompiledMemoryStats\((?P<body>[^()]*)\)")
_STATS_FIELD = re.compile(r"(\w+_in_bytes)\s*=\s*(-?\d+)")

_STARTS = (_HEADER, _RESERVE, _ALLOCATE, _GPU_ALLOCATE)


def parse_oom_reports(text: str) -> list[OomReport]:
    """Every out-of-memory report in ``text``: one from each header (``Ran out of memory``,
    ``Attempting to reserve``, ``Attempting to allocate``) to the next, or one for the whole text
    where it holds report parts but no header. Empty when there is none."""
    # each report from the start of its header's line (the exception type before the status stays with it)
    starts = sorted({text.rfind("\n", 0, m.start()) + 1 for pattern in _STARTS for m in pattern.finditer(text)})
    spans = [(start, starts[i + 1] if i + 1 < len(starts) else len(text)) for i, start in enumerate(starts)]
    if not spans:
        spans = [(0, len(text))]
    reports = []
    for start, end in spans:
        report = parse_oom_report(text[start:end])
        if report is not None:
            reports.append(report)
    return reports


def parse_oom_report(text: str) -> OomReport | None:
    """The report parts in ``text`` (the first of each form) with their reconciliations; None if none."""
    report = OomReport()
    if (m := _HEADER.search(text)) is not None:
        report.header = OomHeader(
            memory_space=m.group("space"), used_bytes=parse_size(m.group("used")),
            capacity_bytes=parse_size(m.group("capacity")), exceeded_bytes=parse_size(m.group("exceeded")),
            at_compile=m.group("compile") is not None, status=m.group("status"),
            error_code=m.group("code"), line=_line_at(text, m.start()))
        used, capacity, exceeded = (Size.parse(m.group(name)) for name in ("used", "capacity", "exceeded"))
        report.reconciliations.append(_reconcile(f"used {m.group('space')} = capacity + exceeded", used,
                                                 [capacity, exceeded]))
    for block, sizes in _blocks(text):
        setattr(report, block.kind, getattr(report, block.kind) or block)
        if getattr(report, block.kind) is block and block.total_bytes is not None:
            known = [size for size in sizes if size is not None]
            header = Size.parse(_title_size(block.title))
            report.reconciliations.append(_reconcile(f"{block.title}: sum of its items", header, known))
            temp = block.item("HLO temp")
            if temp is not None and temp.padded_bytes is not None and temp.fragmentation_bytes is not None:
                detail = _HLO_DETAIL.search(temp.detail)
                report.reconciliations.append(_reconcile(
                    "HLO temp = padded + fragmentation", sizes[block.items.index(temp)],
                    [Size.parse(detail.group("padded")), Size.parse(detail.group("fragb"))]))
    if (m := _OUTPUT.search(text)) is not None:
        report.output = OutputSize(parse_size(m.group("size")) if m.group("size") else None,
                                   parse_size(m.group("shared")) if m.group("shared") else None)
    report.allocations = _allocations(text, report.reconciliations)
    if not report.allocations:
        report.allocations = _peak_buffers(text, report.reconciliations)
    report.buffer_assignment = _buffer_assignment(text, report.reconciliations)
    _cross_checks(report, text)
    if (m := _RESERVE.search(text)) is not None:
        report.reservation = _reservation(text, m, report.reconciliations)
    if (m := _ALLOCATE.search(text)) is not None:
        report.allocation_failure = AllocationFailure(
            requested_bytes=parse_size(m.group("req")),
            free_bytes=parse_size(m.group("free")) if m.group("free") else None,
            largest_free_bytes=parse_size(m.group("largest")) if m.group("largest") else None,
            device=m.group("device"))
    elif (m := _GPU_ALLOCATE.search(text)) is not None:
        report.allocation_failure = AllocationFailure(int(m.group("req")), None, None, None)
    empty = OomReport()
    return None if report == empty else report


def parse_memory_analysis(text: str) -> list[CompiledMemoryStats]:
    """Every ``CompiledMemoryStats(...)`` printed in ``text`` (``compiled.memory_analysis()``),
    on one line or one field a line (``# `` comment marks before them are allowed)."""
    out = []
    for match in _STATS.finditer(text):
        fields = {name: int(value) for name, value in _STATS_FIELD.findall(match.group("body"))}
        if fields:
            out.append(CompiledMemoryStats(fields))
    return out


def _line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return text[start:end if end >= 0 else len(text)].strip()


def _title_size(title: str) -> str:
    return title.rsplit(" ", 1)[1]


def _blocks(text: str):
    """Each titled usage block with the printed sizes of its items (None: ``unknown size``)."""
    for title in _BLOCK_TITLE.finditer(text):
        items, sizes = [], []
        for line in text[title.end():].split("\n")[1:]:
            item = _ITEM.match(line)
            if item is None:
                break
            size = None if item.group("size") == "unknown size" else Size.parse(item.group("size"))
            items.append(_usage_item(item.group("name").strip(), size, item.group("rest").strip()))
            sizes.append(size)
        if title.group("total"):
            kind, space, total, at_least = "total", title.group("tspace"), parse_size(title.group("tsize")), True
        elif title.group("program"):
            kind, space, total, at_least = "program", title.group("pspace"), parse_size(title.group("psize")), False
        else:
            kind = "heap_status" if title.group("heap") else "persistent"
            space, total, at_least = None, None, False
        yield UsageBlock(kind=kind, title=title.group(0).strip().rstrip(":"), memory_space=space, total_bytes=total,
                         at_least=at_least, items=tuple(items)), sizes


def _usage_item(name: str, size: Size | None, rest: str) -> UsageItem:
    hlo = _HLO_DETAIL.search(rest)
    if hlo is not None:
        return UsageItem(name, size.bytes if size else None, rest, utilization_percent=float(hlo.group("util")),
                         unpadded_bytes=parse_size(hlo.group("unpadded")) if hlo.group("unpadded") else None,
                         padded_bytes=parse_size(hlo.group("padded")) if hlo.group("padded") else None,
                         fragmentation_percent=float(hlo.group("frag")), fragmentation_bytes=parse_size(hlo.group("fragb")))
    utilization = _UTILIZATION.search(rest)
    percent = float(utilization.group("util")) if utilization else None
    if utilization is not None and "fragmentation" in utilization.group(0):
        return UsageItem(name, size.bytes if size else None, rest, fragmentation_percent=percent)
    return UsageItem(name, size.bytes if size else None, rest, utilization_percent=percent)


def _allocations(text: str, reconciliations: list[Reconciliation]) -> list[ProgramAllocation]:
    largest = _LARGEST.search(text)
    if largest is None:
        return []
    space = largest.group("space")
    body = text[largest.end():]
    entries = list(_ENTRY.finditer(body))
    out = []
    for index, entry in enumerate(entries):
        end = entries[index + 1].start() if index + 1 < len(entries) else len(body)
        block = body[entry.end():end]
        stop = block.find("==========")
        if stop >= 0:
            block = block[:stop]
        fields = {name: pattern.search(block) for name, pattern in _FIELDS.items()}
        attrs = {}
        if fields["operator"] is not None:
            for key, quoted, bare in _OPERATOR_ATTR.findall(fields["operator"].group(1)):
                attrs.setdefault(key, quoted if quoted or not bare else bare)
        shape = fields["shape"].group(1) if fields["shape"] else None
        dtype, dims = None, None
        if shape is not None and (parsed := _SHAPE.match(shape)) is not None:
            dtype = parsed.group("dtype")
            dims = tuple(int(d) for d in parsed.group("dims").split(",") if d)
        size = Size.parse(entry.group("size"))
        unpadded = Size.parse(fields["unpadded"].group(1)) if fields["unpadded"] else None
        padding = Size.parse(fields["padding"].group(1)) if fields["padding"] else None
        line = attrs.get("source_line")
        allocation = ProgramAllocation(
            rank=int(entry.group("rank")), memory_space=space, size_bytes=size.bytes, shape=shape, dtype=dtype,
            dims=dims, unpadded_bytes=unpadded.bytes if unpadded else None,
            padding_bytes=padding.bytes if padding else None,
            padding_expansion=float(fields["padding"].group(2)) if padding and fields["padding"].group(2) else None,
            op_type=attrs.get("op_type"), op_name=attrs.get("op_name"), source_file=attrs.get("source_file"),
            source_line=int(line) if line and line.isdigit() else None,
            xla_label=fields["label"].group(1) if fields["label"] else None,
            allocation_type=fields["type"].group(1) if fields["type"] else None)
        out.append(allocation)
        rank = allocation.rank
        if unpadded is not None:
            parts = [unpadded] + ([padding] if padding is not None else [])
            reconciliations.append(_reconcile(f"allocation {rank}: size = unpadded + padding", size, parts))
            shape_bytes = allocation.shape_bytes
            if shape_bytes is not None:
                reconciliations.append(_reconcile(f"allocation {rank}: unpadded size = bytes of {shape}", unpadded,
                                                  [Size(shape_bytes, 0, str(shape_bytes))]))
    return out


def _buffer_assignment(text: str, reconciliations: list[Reconciliation]) -> UsageBlock | None:
    """XLA GPU's ``BufferAssignment stats:``; its ``total allocation`` reconciled with the other allocations."""
    title = _BUFFER_STATS.search(text)
    if title is None:
        return None
    items, sizes = [], {}
    for line in text[title.end():].split("\n")[1:]:
        stat = _BUFFER_STAT.match(line)
        if stat is None:
            break
        name, size = stat.group("name").strip(), Size.parse(stat.group("size"))
        items.append(_usage_item(name, size, stat.group("rest").strip()))
        sizes[name] = size
    total = sizes.get("total allocation")
    parts = [size for name, size in sizes.items() if name.endswith(" allocation") and name != "total allocation"]
    if total is not None and parts:
        reconciliations.append(_reconcile("BufferAssignment total allocation: sum of its allocations", total, parts))
    return UsageBlock(kind="buffer_assignment", title="BufferAssignment stats", memory_space=None,
                      total_bytes=total.bytes if total else None, at_least=False, items=tuple(items))


def _peak_buffers(text: str, reconciliations: list[Reconciliation]) -> list[ProgramAllocation]:
    """XLA GPU's ``Peak buffers:`` ``Buffer N:`` entries, each size reconciled with its shape's bytes."""
    peak = _PEAK.search(text)
    if peak is None:
        return []
    body = text[peak.end():]
    entries = list(_BUFFER.finditer(body))
    out = []
    for index, entry in enumerate(entries):
        block = body[entry.end():entries[index + 1].start() if index + 1 < len(entries) else len(body)]
        stop = block.find("==========")
        block = block[:stop] if stop >= 0 else block
        fields = {name: pattern.search(block) for name, pattern in _BUFFER_FIELDS.items()}
        if fields["size"] is None:
            continue
        attrs = {}
        if fields["operator"] is not None:
            for key, quoted, bare in _OPERATOR_ATTR.findall(fields["operator"].group(1)):
                attrs.setdefault(key, quoted if quoted or not bare else bare)
        shape = fields["shape"].group(2) if fields["shape"] else None
        dtype, dims = None, None
        if shape is not None and (parsed := _SHAPE.match(shape)) is not None:
            dtype, dims = parsed.group("dtype"), tuple(int(d) for d in parsed.group("dims").split(",") if d)
        size = Size.parse(fields["size"].group(1))
        line = attrs.get("source_line")
        allocation = ProgramAllocation(
            rank=int(entry.group("rank")), memory_space="device", size_bytes=size.bytes, shape=shape, dtype=dtype,
            dims=dims, unpadded_bytes=None, padding_bytes=None, padding_expansion=None,
            op_type=attrs.get("op_type"), op_name=attrs.get("op_name"), source_file=attrs.get("source_file"),
            source_line=int(line) if line and line.isdigit() else None,
            xla_label=fields["label"].group(1) if fields["label"] else None,
            allocation_type="parameter" if fields["shape"] and fields["shape"].group(1) != "Shape" else None)
        out.append(allocation)
        if allocation.shape_bytes is not None:
            reconciliations.append(_reconcile(f"buffer {allocation.rank}: size = bytes of {shape}", size,
                                              [Size(allocation.shape_bytes, 0, str(allocation.shape_bytes))]))
    return out


def _cross_checks(report: OomReport, text: str) -> None:
    """A figure printed twice agrees with itself: the total's ``program`` item and the program
    requirement. (The header's used bytes are the program's in JAX's reports and the total's in
    TensorFlow's older ones, so they are not checked against either.)"""
    if report.total is not None and report.program is not None and report.program.total_bytes is not None:
        item = report.total.item("program")
        if item is not None and item.bytes is not None:
            psize = Size.parse(_title_size(report.program.title))
            isize = _item_size(text, report.total, item)
            report.reconciliations.append(_reconcile(f"{report.total.title}: its program item = {report.program.title}",
                                                     psize, [isize]))


def _item_size(text: str, block: UsageBlock, item: UsageItem) -> Size:
    """The printed size of an item (for its rounding), found again in the text after its block's title."""
    start = text.find(block.title)
    for line in text[start:].split("\n")[1:]:
        match = _ITEM.match(line)
        if match is None:
            break
        if match.group("name").strip() == item.name:
            return Size.parse(match.group("size"))
    return Size(item.bytes or 0, 0, "")


def _reservation(text: str, m: re.Match, reconciliations: list[Reconciliation]) -> ReservationFailure:
    table: dict[str, int] = {}
    exact: dict[str, Size] = {}
    capacity = _CAPACITY.search(text, m.end())
    capacity_size = Size.parse(capacity.group("size")) if capacity else None
    if capacity is not None:
        for line in text[capacity.end():].split("\n")[1:]:
            row = _CAPACITY_ROW.match(line)
            if row is None:
                if line.strip().startswith("---"):
                    continue
                break
            name = row.group("name").strip()
            size = (Size(int(row.group("exact").replace(",", "")), 0, row.group("exact")) if row.group("exact")
                    else Size.parse(row.group("size")))
            table[name] = size.bytes
            exact[name] = size
    reservation = ReservationFailure(
        requested_bytes=parse_size(m.group("req")),
        free_bytes=parse_size(m.group("free")) if m.group("free") else None,
        reserved_bytes=parse_size(m.group("reserved")) if m.group("reserved") else None,
        reservable_bytes=parse_size(m.group("reservable")) if m.group("reservable") else None,
        capacity_bytes=capacity_size.bytes if capacity_size else None, table=table)
    after = exact.get("Available after request")
    parts = [exact[name] for name in ("Top-of-Memory reserved", "Currently allocated", "Program requirement")
             if name in exact]
    if capacity_size is not None and after is not None and len(parts) == 3:
        # capacity = reserved + allocated + requirement + available after (negative: the shortfall)
        reconciliations.append(_reconcile(f"{capacity.group('space')} capacity = reserved + allocated + "
                                          "requirement + available after", capacity_size, [*parts, after]))
    requirement = exact.get("Program requirement")
    if requirement is not None:
        reconciliations.append(_reconcile("requested reservation = program requirement", requirement,
                                          [Size.parse(m.group("req"))]))
    return reservation
