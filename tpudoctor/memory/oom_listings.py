"""The allocation listings of an out-of-memory report, one ``ProgramAllocation`` per entry: libtpu's ``Largest
program allocations in hbm:`` (``N. Size: X`` entries) and XLA GPU's ``Peak buffers:`` (``Buffer N:`` entries), each
reconciled with its own figures."""

from __future__ import annotations

import re

from tpudoctor.memory.oom_report import (
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
_PEAK = re.compile(r"^[ \t]*Peak buffers:[ \t]*$", re.MULTILINE)
_BUFFER = re.compile(r"^[ \t]*Buffer (?P<rank>\d+):[ \t]*$", re.MULTILINE)
_BUFFER_FIELDS = {
    "size": re.compile(r"^[ \t]*Size:[ \t]*(" + SIZE_PATTERN + r")[ \t]*$", re.MULTILINE),
    "operator": _FIELDS["operator"],
    "shape": re.compile(r"^[ \t]*(Shape|Entry Parameter Subshape):[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
    "label": re.compile(r"^[ \t]*XLA Label:[ \t]*(\S.*?)[ \t]*$", re.MULTILINE),
}


def largest_allocations(text: str, reconciliations: list[Reconciliation]) -> list[ProgramAllocation]:
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
            reconciliations.append(reconcile(f"allocation {rank}: size = unpadded + padding", size, parts))
            shape_bytes = allocation.shape_bytes
            if shape_bytes is not None:
                reconciliations.append(reconcile(f"allocation {rank}: unpadded size = bytes of {shape}", unpadded,
                                                  [Size(shape_bytes, 0, str(shape_bytes))]))
    return out


def peak_buffers(text: str, reconciliations: list[Reconciliation]) -> list[ProgramAllocation]:
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
            reconciliations.append(reconcile(f"buffer {allocation.rank}: size = bytes of {shape}", size,
                                              [Size(allocation.shape_bytes, 0, str(allocation.shape_bytes))]))
    return out
