"""The out-of-memory reports XLA and libtpu print, and ``compiled.memory_analysis()``, as dataclasses.

    from tpudoctor.logs.oom import parse_oom_reports
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
* ``Compilation failure: Aborting compilation early because it's unlikely to have enough memory. Requires 3.47E,
  has 14.49G available.``: the compiler's estimate, no listing after it (``OomReport.early_abort``).
* ``CompiledMemoryStats(generated_code_size_in_bytes=..., argument_size_in_bytes=..., ...)``: what
  ``print(jax.jit(f).lower(...).compile().memory_analysis())`` writes (one line, or one field a line).

Logs often print a listing one log line at a time, each with its prefix (pytorch/xla#1965: ``2020-05-04
09:05:40.721128: E    1578 tensorflow/.../xla_util.cc:76]      Shape: bf16[512,16,3072]``), or a launcher or viewer
wraps every line (``[pod/NAME/c] ``, ``(pid=123) ``, ``[rank0]: ``): the forms are read in what the program wrote
(``tpudoctor.logs.prefixes``), one printer at a time, so other threads' lines between a listing's lines do not
cut it; a line without a prefix continues the line before it (a multi-line log message).

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

from tpudoctor.logs.oom_listings import (
    allocation_of,
    largest_allocations,
    peak_buffers,
    usage_tables,
)
from tpudoctor.logs.oom_report import (
    SIZE_PATTERN,
    AllocationFailure,
    CompiledMemoryStats,
    EarlyAbort,
    OomHeader,
    OomReport,
    OutputSize,
    ProgramAllocation,
    Reconciliation,
    ReservationFailure,
    Size,
    UnreadableSize,
    UsageBlock,
    UsageItem,
    parse_size,
    reconcile,
)
from tpudoctor.logs.prefixes import clean, kubectl_worker, log_prefix, program_line

# --- the forms ---------------------------------------------------------------------------------------------------

_HEADER = re.compile(
    r"(?:(?P<status>RESOURCE_EXHAUSTED|Resource exhausted):\s*)?"
    r"(?:(?P<code>E\d+:\s*\w+):\s*)?"
    r"(?:(?P<compile>XLA:\w+ compile permanent error\.|Compilation failure:)\s*)?"
    r"(?:From /job:\S+\s*)?"
    r"Ran out of memory in\s+memory space (?P<space>\w+)(?:\.\s*Used (?P<used>" + SIZE_PATTERN + r") of (?P<capacity>"
    + SIZE_PATTERN + r") (?P=space)\.\s*Exceeded (?P=space) capacity by (?P<exceeded>" + SIZE_PATTERN + r")\.?"
    r"|(?P<stack> while allocating on stack for %(?P<op>[\w.-]+) = (?P<shape>[a-z][a-z0-9]*\[[0-9,]*\]\S*))|\.|\b)")
"""XLA's and libtpu's header; its figures are left out in some (``... vmem.``, ``... vmem while allocating on stack for
%op = shape``)."""
_JAX_HEADER = re.compile(
    r"(?:(?P<status>RESOURCE_EXHAUSTED):\s*)?Ran out of memory on (?P<space>\w+), the total memory required for "
    r"[\w ]+? \((?P<used>" + SIZE_PATTERN + r")\) exceeds available (?P=space) \((?P<capacity>" + SIZE_PATTERN + r")\)")
"""The compile error JAX raises on TPU: ``Ran out of memory on HBM, the total memory required for HLO temporaries
(25.03G) exceeds available HBM (15.75G).``"""
_SPLIT_HEADER = re.compile(
    r"(?:(?P<status>RESOURCE_EXHAUSTED):\s*)?TPU TensorCore (?P<space>\w+) usage:? (?P<tc>" + SIZE_PATTERN
    + r"),\s*SparseCore (?P=space) usage:? (?P<sc>" + SIZE_PATTERN + r"),\s*exceeding available bytes:? (?P<capacity>"
    + SIZE_PATTERN + r")")
"""libtpu's TensorCore + SparseCore form (openxla.org/xla/errors/error_1000)."""
_PAYLOAD = re.compile(r"\s*\[type\.googleapis\.com/[\w.]+='(?:[^'\\]|\\.)*'\]")
"""A status payload (``[type.googleapis.com/tensorflow.tpu.CompilationResultProto='...']``): JAX's error carries the
compiler's message again in it, escaped; it is a copy, not a second report."""
_BLOCK_TITLE = re.compile(
    r"^[ \t]*(?:(?P<total>Total (?P<tspace>\w+) usage >= (?P<tsize>" + SIZE_PATTERN + r"))"
    r"|(?P<program>Program (?P<pspace>\w+) requirement (?P<psize>" + SIZE_PATTERN + r"))"
    r"|(?P<heap>Heap allocator status)|(?P<persistent>Persistent allocations include some or all of)):[ \t]*$",
    re.MULTILINE)
_ITEM = re.compile(r"^[ \t]+(?P<name>\S.*?)[ \t]+(?P<size>" + SIZE_PATTERN + r"|unknown size)(?P<rest>(?:[ \t].*)?)$")
_HLO_DETAIL = re.compile(
    r"\((?P<util>[0-9.]+)% utilization(?::\s*Unpadded \((?P<unpadded>" + SIZE_PATTERN + r")\)\s*Padded \((?P<padded>"
    + SIZE_PATTERN + r")\))?,\s*(?P<frag>[0-9.]+)% fragmentation \((?P<fragb>" + SIZE_PATTERN + r")\)\)")
_UTILIZATION = re.compile(r"\((?P<util>[0-9.]+)% (?:utilization|fragmentation)\)")
_OUTPUT = re.compile(r"^[ \t]*Output size (?:(?P<size>" + SIZE_PATTERN + r"); shares (?P<shared>" + SIZE_PATTERN
                     + r") with arguments|unknown)\.", re.MULTILINE)
_RESERVE = re.compile(
    r"Attempting to reserve (?P<req>" + SIZE_PATTERN + r") at the bottom of memory\. That was not possible\."
    r"(?:\s*There are (?P<free>" + SIZE_PATTERN + r") free, (?P<reserved>" + SIZE_PATTERN + r") reserved, and (?P<reservable>"
    + SIZE_PATTERN + r") reservable\.)?")
_CAPACITY = re.compile(r"^[ \t]*(?P<space>\w+) capacity (?P<size>" + SIZE_PATTERN + r"):[ \t]*$", re.MULTILINE)
_CAPACITY_ROW = re.compile(r"^[ \t]*(?P<name>[A-Za-z][A-Za-z -]*?):[ \t]*(?P<size>" + SIZE_PATTERN
                           + r")[ \t]*(?:\([ \t]*(?P<exact>-?[0-9,]+) bytes\))?[ \t]*$")
_ALLOCATE = re.compile(
    r"Attempting to allocate (?P<req>" + SIZE_PATTERN + r")\. That was not possible\.(?:\s*There are (?P<free>" + SIZE_PATTERN
    + r") free\.)?(?:\s*Due to fragmentation, the largest contiguous region of free memory is (?P<largest>" + SIZE_PATTERN
    + r")\.)?(?:;?\s*\((?P<device>[^)\s]+)\))?")
_GPU_ALLOCATE = re.compile(r"Out of\s+memory while trying to allocate (?P<req>\d+) bytes\.?")
_PJRT_ALLOCATE = re.compile(r"Failed to allocate request for (?P<size>" + SIZE_PATTERN + r")(?:\s*\((?P<exact>\d+)B\))?"
                            r"(?: on device ordinal (?P<ordinal>\d+))?")
_TF_OOM = re.compile(
    r"OOM when allocating tensor (?:of shape \[|with shape\[)(?P<dims>[0-9, ]*)\](?: and type (?P<type>\w+))?"
    r"(?: on (?P<device>\S+?))?(?: by allocator (?P<allocator>\w+))?(?=[\s.\[]|$)")
_TF_OP = re.compile(r"\[Op:(?P<op>[\w.-]+)\]|\[\[(?:\{\{)?[Nn]ode:? (?P<node>[^\s=\]}]+)")
# TensorFlow's dtype names (DataTypeString) and their bytes
_TF_TYPE_BYTES = {"float": 4, "half": 2, "double": 8, "bfloat16": 2, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2,
                  "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "bool": 1, "complex64": 8, "complex128": 16}
_BUFFER_STATS = re.compile(r"^[ \t]*BufferAssignment stats:[ \t]*$", re.MULTILINE)
_BUFFER_STAT = re.compile(r"^[ \t]+(?P<name>[\w ]+?):[ \t]+(?P<size>" + SIZE_PATTERN + r")(?P<rest>(?:[ \t].*)?)$")
_EARLY_ABORT = re.compile(
    r"Aborting compilation early because it's unlikely to have enough (?:device )?memory\.\s*Requires (?P<req>"
    + SIZE_PATTERN + r"), has (?P<avail>" + SIZE_PATTERN + r") available\.?")
_STATS = re.compile(r"CompiledMemoryStats\((?P<body>[^()]*)\)")
_STATS_FIELD = re.compile(r"(\w+_in_bytes)\s*=\s*(-?\d+)")

_STARTS = (_HEADER, _JAX_HEADER, _SPLIT_HEADER, _RESERVE, _ALLOCATE, _GPU_ALLOCATE, _PJRT_ALLOCATE, _TF_OOM,
           _EARLY_ABORT)


@dataclasses.dataclass
class _Printed:
    """The lines one printer wrote (a thread's file:line, in a pod), without their prefixes, and where each is in
    the log."""

    lines: list[str] = dataclasses.field(default_factory=list)
    numbers: list[int] = dataclasses.field(default_factory=list)


def parse_oom_reports(text: str, unreadable: list[str] | None = None, *, line_offset: int = 0) -> list[OomReport]:
    """Every out-of-memory report in ``text``, in the order the log has them: one from each header (``Ran out of
    memory``, ``Attempting to reserve``, ``Attempting to allocate``, ``Aborting compilation early``) to the next
    one of the same printer, or one for all a printer wrote where it holds report parts but no header. Log
    prefixes and launchers' wrappers are read through (the module's doc). Empty when there is none.

    A report holding a size no byte count reaches (``UnreadableSize``) is left out, and what is wrong with it
    (its line and why) goes to ``unreadable``."""
    raw = [_PAYLOAD.sub("", line) if "type.googleapis.com/" in line else line for line in text.split("\n")]
    found = []
    for printed in _printers(raw):
        body = "\n".join(printed.lines)
        # each report from the start of its header's line (the exception type before the status stays with it)
        starts = sorted({body.rfind("\n", 0, m.start()) + 1 for pattern in _STARTS for m in pattern.finditer(body)})
        spans = [(start, starts[i + 1] if i + 1 < len(starts) else len(body)) for i, start in enumerate(starts)]
        for start, end in spans or [(0, len(body))]:
            first = body.count("\n", 0, start)
            try:
                report = parse_oom_report(body[start:end])
            except UnreadableSize as exc:
                if unreadable is not None:
                    unreadable.append(f"line {line_offset + printed.numbers[first] + 1}: {exc}")
                continue
            if report is None:
                continue
            if report.header is not None:  # the header's line as the log printed it, prefix and all
                row = first + body.count("\n", start, _header_match(body, start, end).start())
                report.header = dataclasses.replace(report.header, line=clean(raw[printed.numbers[row]]).strip())
            found.append((printed.numbers[first], report))
    return [report for _, report in sorted(found, key=lambda pair: pair[0])]


def _printers(raw: list[str]) -> list[_Printed]:
    """The log's lines by who printed them: a glog/TensorFlow C++ line by its thread and file:line (in its pod
    under ``kubectl logs --prefix``), a line without a log prefix with the line before it."""
    printers: dict[tuple[str | None, str | None], _Printed] = {}
    last_source: dict[str | None, str | None] = {}
    key: tuple[str | None, str | None] = (None, None)
    for number, line in enumerate(raw):
        pod, rest = kubectl_worker(clean(line))
        source, payload = log_prefix(program_line(rest))
        if source is not None or pod is not None:
            source = source if source is not None else last_source.get(pod)
            last_source[pod] = source
            key = (pod, source)
        printed = printers.setdefault(key, _Printed())
        printed.lines.append(payload)
        printed.numbers.append(number)
    return list(printers.values())


def parse_oom_report(text: str) -> OomReport | None:
    """The report parts in ``text`` (the first of each form) with their reconciliations; None if none."""
    report = OomReport()
    _read_header(report, text)
    for block, sizes in _blocks(text):
        setattr(report, block.kind, getattr(report, block.kind) or block)
        if getattr(report, block.kind) is block and block.total_bytes is not None:
            known = [size for size in sizes if size is not None]
            header = Size.parse(_title_size(block.title))
            report.reconciliations.append(reconcile(f"{block.title}: sum of its items", header, known))
            temp = block.item("HLO temp")
            if temp is not None and temp.padded_bytes is not None and temp.fragmentation_bytes is not None:
                detail = _HLO_DETAIL.search(temp.detail)
                report.reconciliations.append(reconcile(
                    "HLO temp = padded + fragmentation", sizes[block.items.index(temp)],
                    [Size.parse(detail.group("padded")), Size.parse(detail.group("fragb"))]))
    if (m := _OUTPUT.search(text)) is not None:
        report.output = OutputSize(parse_size(m.group("size")) if m.group("size") else None,
                                   parse_size(m.group("shared")) if m.group("shared") else None)
    space = report.header.memory_space if report.header is not None else None
    report.allocations = (largest_allocations(text, report.reconciliations, space)
                          or peak_buffers(text, report.reconciliations)
                          or usage_tables(text, report.reconciliations, space)
                          or _stack_allocation(text, space))
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
    elif (m := _PJRT_ALLOCATE.search(text)) is not None:
        requested = int(m.group("exact")) if m.group("exact") else parse_size(m.group("size"))
        device = f"device ordinal {m.group('ordinal')}" if m.group("ordinal") else None
        report.allocation_failure = AllocationFailure(requested, None, None, device)
    elif (m := _TF_OOM.search(text)) is not None:
        tensor = _tf_tensor(m, text)
        report.allocation_failure = AllocationFailure(tensor.size_bytes, None, None, m.group("device"))
        if not report.allocations:
            report.allocations = [tensor]
    if (m := _EARLY_ABORT.search(text)) is not None:
        report.early_abort = EarlyAbort(parse_size(m.group("req")), parse_size(m.group("avail")))
    empty = OomReport()
    return None if report == empty else report


def _header_match(text: str, start: int = 0, end: int | None = None) -> re.Match | None:
    """The first header of any form in ``text[start:end]``."""
    end = len(text) if end is None else end
    found = [m for pattern in (_HEADER, _JAX_HEADER, _SPLIT_HEADER) if (m := pattern.search(text, start, end))]
    return min(found, key=lambda m: m.start()) if found else None


def _read_header(report: OomReport, text: str) -> None:
    m = _header_match(text)
    if m is None:
        return
    status = m.group("status")
    if m.re is _HEADER:
        space, compiled, code = m.group("space"), m.group("compile") is not None, m.group("code")
        if m.group("used") is None:  # the space named, no figures
            report.header = OomHeader(space, None, None, None, compiled or m.group("stack") is not None, status,
                                      code, _line_at(text, m.start()))
            return
        used, capacity, exceeded = (Size.parse(m.group(name)) for name in ("used", "capacity", "exceeded"))
        report.reconciliations.append(reconcile(f"used {space} = capacity + exceeded", used, [capacity, exceeded]))
    elif m.re is _JAX_HEADER:
        space, compiled, code = m.group("space").lower(), True, None
        used, capacity = Size.parse(m.group("used")), Size.parse(m.group("capacity"))
        exceeded = Size(used.bytes - capacity.bytes, used.slack + capacity.slack, "")
    else:  # TensorCore + SparseCore
        space, compiled, code = m.group("space").lower(), True, None
        core, sparse, capacity = (Size.parse(m.group(name)) for name in ("tc", "sc", "capacity"))
        used = Size(core.bytes + sparse.bytes, core.slack + sparse.slack, "")
        exceeded = Size(used.bytes - capacity.bytes, used.slack + capacity.slack, "")
    report.header = OomHeader(
        memory_space=space, used_bytes=used.bytes, capacity_bytes=capacity.bytes, exceeded_bytes=exceeded.bytes,
        at_compile=compiled, status=status, error_code=code, line=_line_at(text, m.start()))


def _stack_allocation(text: str, space: str | None) -> list[ProgramAllocation]:
    """``Ran out of memory in memory space vmem while allocating on stack for %op = shape ...``: that op's buffer."""
    m = _HEADER.search(text)
    if m is None or m.group("stack") is None:
        return []
    return [allocation_of(rank=1, memory_space=space or m.group("space"), size_bytes=None, shape=m.group("shape"),
                          op_name=m.group("op"))]


def _tf_tensor(m: re.Match, text: str) -> ProgramAllocation:
    """TensorFlow's ``OOM when allocating tensor with shape[...] and type T``: the tensor, its bytes where its type
    says them, its op (``[Op:Mul]``, ``[[Node: name = ...``) where the text names it."""
    dims = tuple(int(d) for d in m.group("dims").replace(" ", "").split(",") if d)
    kind = m.group("type")
    size = None
    if kind in _TF_TYPE_BYTES:
        size = _TF_TYPE_BYTES[kind] * math.prod(dims)
    op = _TF_OP.search(text, m.end())
    name = (op.group("op") or op.group("node")) if op is not None else None
    return allocation_of(rank=1, memory_space="device", size_bytes=size, shape=f"{kind or ''}[{','.join(map(str, dims))}]",
                         op_name=name, dtype=kind, dims=dims)


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
        reconciliations.append(reconcile("BufferAssignment total allocation: sum of its allocations", total, parts))
    return UsageBlock(kind="buffer_assignment", title="BufferAssignment stats", memory_space=None,
                      total_bytes=total.bytes if total else None, at_least=False, items=tuple(items))




def _cross_checks(report: OomReport, text: str) -> None:
    """A figure printed twice agrees with itself: the total's ``program`` item and the program
    requirement. (The header's used bytes are the program's in JAX's reports and the total's in
    TensorFlow's older ones, so they are not checked against either.)"""
    if report.total is not None and report.program is not None and report.program.total_bytes is not None:
        item = report.total.item("program")
        if item is not None and item.bytes is not None:
            psize = Size.parse(_title_size(report.program.title))
            isize = _item_size(text, report.total, item)
            report.reconciliations.append(reconcile(f"{report.total.title}: its program item = {report.program.title}",
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
        reconciliations.append(reconcile(f"{capacity.group('space')} capacity = reserved + allocated + "
                                          "requirement + available after", capacity_size, [*parts, after]))
    requirement = exact.get("Program requirement")
    if requirement is not None:
        reconciliations.append(reconcile("requested reservation = program requirement", requirement,
                                          [Size.parse(m.group("req"))]))
    return reservation


# --- reading a whole log, streamed -------------------------------------------------------------------------------

_TRIGGER = re.compile(
    r"Ran out of memory|Attempting to (?:reserve|allocate)|usage >=|requirement|program allocations|Size:|Shape:|"
    r"Failed to allocate request|OOM when allocating|Hbm usage|Memory usage report|cumulative_size|Memory Space:|"
    r"allocator status|Persistent allocations|memory while trying|BufferAssignment|Peak buffers|Buffer \d|"
    r"Aborting compilation|CompiledMemoryStats|_in_bytes|capacity|Operator:|label:|Allocation type")
"""A line that may belong to a listing; the lines around one are kept, every other line is dropped unread."""
LINES_BEFORE = 8
"""Lines kept before a listing's line (the log line whose message it continues, the exception's type)."""
LINES_AFTER = 400
"""Lines kept after the last listing line (a block's items, an allocation's fields)."""
MAX_SEGMENT_CHARS = 8 << 20
"""A run of kept lines is parsed (and let go) once it holds this much text."""


@dataclasses.dataclass
class OomText:
    """What one log holds: its reports (``parse_oom_reports``), ``compiled.memory_analysis()`` stats, the listings
    left out for an unreadable size, and the lines read."""

    reports: list[OomReport] = dataclasses.field(default_factory=list)
    stats: list[CompiledMemoryStats] = dataclasses.field(default_factory=list)
    unreadable: list[str] = dataclasses.field(default_factory=list)
    lines: int = 0


def read_oom_text(lines) -> OomText:
    """The reports of a log given as lines (``tpudoctor.logs.sources``' bounded lines), read in one pass: only the
    runs of lines near a listing's line are held, each parsed as soon as it ends, so a log of any length takes the
    memory of its listings. An overlong line's further windows (``LinePiece``) are skipped: a listing line is short."""
    from collections import deque

    from tpudoctor.logs.sources import LinePiece

    out = OomText()
    before: deque[str] = deque(maxlen=LINES_BEFORE)
    segment: list[str] = []
    size = first = left = 0

    def close() -> None:
        nonlocal segment, size
        if segment:
            text = "\n".join(segment)
            out.reports += parse_oom_reports(text, out.unreadable, line_offset=first)
            out.stats += parse_memory_analysis(text)
        segment, size = [], 0

    for line in lines:
        if isinstance(line, LinePiece):
            continue
        out.lines += 1
        line = line.rstrip("\r\n")
        if _TRIGGER.search(line):
            if left == 0:
                first = out.lines - 1 - len(before)
                segment.extend(before)
                size = sum(len(kept) for kept in before)
                before.clear()
            left = LINES_AFTER
        if left > 0:
            segment.append(line)
            size += len(line) + 1
            left -= 1
            if left == 0 or size > MAX_SEGMENT_CHARS:
                close()
                left = 0
        else:
            before.append(line)
    close()
    return out
