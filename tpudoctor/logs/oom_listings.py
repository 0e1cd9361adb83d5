"""The allocation listings of an out-of-memory report, one ``ProgramAllocation`` per entry: libtpu's ``Largest
program allocations in hbm:`` (``N. Size: X`` entries, read with or without their title, and the tail of an entry an
excerpt starts in), XLA GPU's ``Peak buffers:`` (``Buffer N:`` entries) and libtpu's ``Memory usage report`` tables
(their columns read from each table's header line), each reconciled with its own figures."""

from __future__ import annotations

import dataclasses
import re

from tpudoctor.logs.oom_report import (
    SIZE_PATTERN,
    ProgramAllocation,
    Reconciliation,
    Size,
    reconcile,
)

_LARGEST = re.compile(r"^[ \t]*Largest program allocations in (?P<space>\w+):[ \t]*$", re.MULTILINE)
_ENTRY = re.compile(r"^[ \t]*(?P<rank>\d+)\.[ \t]+Size:[ \t]*(?P<size>" + SIZE_PATTERN + r")[ \t]*$", re.MULTILINE)
_FIELDS = {
    "operator": re.compile(r"^[ \t]*Operator:[ \t]*(\S.*)$", re.MULTILINE),
    "shape": re.compile(r"^[ \t]*Shape:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
    "unpadded": re.compile(r"^[ \t]*Unpadded size:[ \t]*(" + SIZE_PATTERN + r")", re.MULTILINE),
    "padding": re.compile(r"^[ \t]*Extra memory due to padding:[ \t]*(" + SIZE_PATTERN + r")(?:[ \t]*\(([0-9.]+)x expansion\))?",
                          re.MULTILINE),
    "label": re.compile(r"^[ \t]*XLA label:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
    "type": re.compile(r"^[ \t]*Allocation type:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
}
_OPERATOR_ATTR = re.compile(r'(op_type|op_name|source_file|source_line)=(?:"((?:[^"\\]|\\.)*)"|(\S+))')
_SHAPE = re.compile(r"^(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[0-9,]*)\]")
_TAIL_FIELDS = re.compile(r"^[ \t]*(?:Unpadded size|Allocation type|XLA label):", re.MULTILINE)
"""Fields only libtpu's allocation entries print: a run of them is an entry, with or without its first line."""
_PEAK = re.compile(r"^[ \t]*Peak buffers:[ \t]*$", re.MULTILINE)
_BUFFER = re.compile(r"^[ \t]*Buffer (?P<rank>\d+):[ \t]*$", re.MULTILINE)
_BUFFER_FIELDS = {
    "size": re.compile(r"^[ \t]*Size:[ \t]*(" + SIZE_PATTERN + r")[ \t]*$", re.MULTILINE),
    "operator": _FIELDS["operator"],
    "shape": re.compile(r"^[ \t]*(Shape|Entry Parameter Subshape):[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
    "label": re.compile(r"^[ \t]*XLA Label:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
}


def allocation_of(*, rank: int, memory_space: str, size_bytes: int | None, shape: str | None,
                  op_name: str | None = None, dtype: str | None = None, dims: tuple[int, ...] | None = None,
                  allocation_type: str | None = None) -> ProgramAllocation:
    """An allocation a text names with few fields (its shape's type and dims read from ``shape`` if not given)."""
    if shape is not None and dtype is None and (parsed := _SHAPE.match(shape)) is not None:
        dtype, dims = parsed.group("dtype"), tuple(int(d) for d in parsed.group("dims").split(",") if d)
    return ProgramAllocation(
        rank=rank, memory_space=memory_space, size_bytes=size_bytes, shape=shape, dtype=dtype, dims=dims,
        unpadded_bytes=None, padding_bytes=None, padding_expansion=None, op_type=None, op_name=op_name,
        source_file=None, source_line=None, xla_label=None, allocation_type=allocation_type)


def largest_allocations(text: str, reconciliations: list[Reconciliation],
                        header_space: str | None = None) -> list[ProgramAllocation]:
    """The ``N. Size: X`` entries, after their ``Largest program allocations in SPACE:`` title or without it (an
    excerpt, a log that prints each entry as its own line); an excerpt that starts inside an entry (its ``Shape:``,
    ``Unpadded size:``... lines, up to the entry's ``=====`` rule) gives that entry too, rank 0 and size unknown."""
    largest = _LARGEST.search(text)
    space = largest.group("space") if largest is not None else (header_space or "unknown")
    body = text[largest.end():] if largest is not None else text
    entries = list(_ENTRY.finditer(body))
    spans = [(entry, entry.end(), entries[i + 1].start() if i + 1 < len(entries) else len(body))
             for i, entry in enumerate(entries)]
    head = body[:entries[0].start()] if entries else body
    if largest is None and _TAIL_FIELDS.search(head) and "==========" in head:
        spans.insert(0, (None, 0, head.find("==========")))
    out = []
    for entry, start, end in spans:
        block = body[start:end]
        stop = block.find("==========")
        if stop >= 0:
            block = block[:stop]
        fields = {name: pattern.search(block) for name, pattern in _FIELDS.items()}
        if largest is None and not any(fields.values()):
            continue  # without its title, a lone "1. Size: X" line is no entry
        attrs = {}
        if fields["operator"] is not None:
            for key, quoted, bare in _OPERATOR_ATTR.findall(fields["operator"].group(1)):
                attrs.setdefault(key, quoted if quoted or not bare else bare)
        shape = fields["shape"].group(1) if fields["shape"] else None
        dtype, dims = None, None
        if shape is not None and (parsed := _SHAPE.match(shape)) is not None:
            dtype = parsed.group("dtype")
            dims = tuple(int(d) for d in parsed.group("dims").split(",") if d)
        size = Size.parse(entry.group("size")) if entry is not None else None
        unpadded = Size.parse(fields["unpadded"].group(1)) if fields["unpadded"] else None
        padding = Size.parse(fields["padding"].group(1)) if fields["padding"] else None
        line = attrs.get("source_line")
        allocation = ProgramAllocation(
            rank=int(entry.group("rank")) if entry is not None else 0, memory_space=space,
            size_bytes=size.bytes if size is not None else None, shape=shape, dtype=dtype,
            dims=dims, unpadded_bytes=unpadded.bytes if unpadded else None,
            padding_bytes=padding.bytes if padding else None,
            padding_expansion=float(fields["padding"].group(2)) if padding and fields["padding"].group(2) else None,
            op_type=attrs.get("op_type"), op_name=attrs.get("op_name"), source_file=attrs.get("source_file"),
            source_line=int(line) if line and line.isdigit() else None,
            xla_label=fields["label"].group(1) if fields["label"] else None,
            allocation_type=fields["type"].group(1) if fields["type"] else None)
        out.append(allocation)
        rank = allocation.rank
        if unpadded is not None and size is not None:
            parts = [unpadded] + ([padding] if padding is not None else [])
            reconciliations.append(reconcile(f"allocation {rank}: size = unpadded + padding", size, parts))
            shape_bytes = allocation.shape_bytes
            if shape_bytes is not None:
                reconciliations.append(reconcile(f"allocation {rank}: unpadded size = bytes of {shape}", unpadded,
                                                  [Size(shape_bytes, 0, str(shape_bytes))]))
    return out


def peak_buffers(text: str, reconciliations: list[Reconciliation]) -> list[ProgramAllocation]:
    """XLA GPU's ``Peak buffers:`` ``Buffer N:`` entries (with or without that title; an entry without its
    ``Size:`` is none), each size reconciled with its shape's bytes."""
    peak = _PEAK.search(text)
    body = text[peak.end():] if peak is not None else text
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
            reconciliations.append(reconcile(f"buffer {allocation.rank}: size = bytes of {shape}", size,
                                              [Size(allocation.shape_bytes, 0, str(allocation.shape_bytes))]))
    return out


_MEMORY_SPACE = re.compile(r"^[ \t]*Memory Space:[ \t]*(?P<name>\w+)(?:[ \t]*\(color=(?P<color>\d+)\))?", re.MULTILINE)
_TOTAL_BYTES = re.compile(r"^[ \t]*Total bytes:[ \t]*(?P<bytes>\d+)", re.MULTILINE)
_COLUMNS = re.compile(r"^[ \t]*(?P<names>[a-z_]+(?:;[ \t]*[a-z_]+)+)[ \t]*$", re.MULTILINE)
"""A table's header line: names separated by ``;`` (libtpu prints ``cumulative_size; size; offset;
used_by_n_values; shapes_list``); each row has as many ``;``-separated cells."""
_PERCENT = re.compile(r"\(\s*[0-9.]+%\)$")


def usage_tables(text: str, reconciliations: list[Reconciliation],
                 header_space: str | None = None) -> list[ProgramAllocation]:
    """libtpu's ``Memory usage report``: per memory space (``Memory Space: default (color=0)``, ``Total bytes: N``),
    one table per allocation, its rows the values that share it (at their offsets, reusing its bytes over time). An
    allocation's size is the extent its rows' offsets and sizes span (else its last ``cumulative_size``), its shape the largest value's ``shapes_list``; the allocations
    of the default space (the header's, e.g. hbm) are ranked by size and each space's sum reconciled with its
    ``Total bytes``, unless the log cut the report short (a table left without rows: libtpu's report is one log
    message, and glog cuts a long one; then the tables read are the largest, not all)."""
    spaces = list(_MEMORY_SPACE.finditer(text))
    out: list[ProgramAllocation] = []
    for index, space in enumerate(spaces):
        body = text[space.end():spaces[index + 1].start() if index + 1 < len(spaces) else len(text)]
        name, main = space.group("name"), header_space or "hbm"
        if name == "default":
            name = main
        elif name == main:  # a coloured space of the same name as the default memory's (v4's hbm, color=3)
            name = f"{name} (color={space.group('color')})"
        sizes: list[Size] = []
        tables = list(_COLUMNS.finditer(body))
        cut = False
        for columns in tables:
            names = [cell.strip() for cell in columns.group("names").split(";")]
            if "size" not in names:
                continue
            rows = []
            for line in body[columns.end():].split("\n")[1:]:
                if line.strip().startswith("---"):
                    continue
                cells = [cell.strip() for cell in line.split(";")]
                if len(cells) != len(names):
                    break
                rows.append(dict(zip(names, cells, strict=True)))
            if not rows:
                cut = True  # a table without rows: the log cut the message there (glog's line limit)
                continue
            try:
                row_sizes = [Size.parse(row["size"]) for row in rows]
                cumulative = (Size.parse(_PERCENT.sub("", rows[-1]["cumulative_size"]))
                              if "cumulative_size" in rows[-1] else None)
            except ValueError:
                continue
            largest = max(range(len(rows)), key=lambda i: row_sizes[i].bytes)
            offsets = [row.get("offset", "") for row in rows]
            if all(offset.isdigit() for offset in offsets):  # the extent its values span (they reuse its bytes)
                low = min(int(offset) for offset in offsets)
                high = max(int(offset) + size.bytes for offset, size in zip(offsets, row_sizes, strict=False))
                size = Size(high - low, sum(size.slack for size in row_sizes), "")
            else:
                size = cumulative if cumulative is not None else row_sizes[largest]
            sizes.append(size)
            out.append(allocation_of(rank=0, memory_space=name, size_bytes=size.bytes,
                                     shape=rows[largest].get("shapes_list"), allocation_type="buffer allocation"))
        total = _TOTAL_BYTES.search(body)
        if total is not None and sizes and not cut:
            exact = int(total.group("bytes"))
            reconciliations.append(reconcile(f"Memory usage report, {name}: Total bytes = sum of its allocations",
                                             Size(exact, 0, total.group("bytes")), sizes))
    out.sort(key=lambda a: -(a.size_bytes or 0))
    return [dataclasses.replace(a, rank=rank) for rank, a in enumerate(out, 1)]
