"""The subset of XLA's ``HloProto`` the buffer plan reads, built at import from a descriptor written in Python.

Built by ``proto_subset`` (a private descriptor pool, only the fields tpudoctor reads; the others are kept as
unknown fields and skipped).

Field numbers are XLA's, from ``xla/service/hlo.proto`` and ``xla/xla_data.proto`` (read from the descriptors of
the ``hlo_pb2`` and ``xla_data_pb2`` modules TensorFlow 2.21 ships under ``tensorflow/compiler/xla``; a test
compares them where TensorFlow is installed). Enum fields (``element_type``, the heap-simulator event
``kind``, the alias ``kind``) are declared ``int32``: the same varint on the wire, no enum descriptor needed.
"""

from __future__ import annotations

from typing import Any

from tpudoctor.captures.proto_subset import ProtoSubset

PACKAGE = "tpudoctor.xla"

# (message, [(field name, number, type, repeated)]); a type not in proto_subset.SCALARS is a message of this file.
MESSAGES: list[tuple[str, list[tuple[str, int, str, bool]]]] = [
    ("HloProto", [
        ("hlo_module", 1, "HloModuleProto", False),
        ("buffer_assignment", 3, "BufferAssignmentProto", False),
    ]),
    ("HloModuleProto", [
        ("name", 1, "string", False),
        ("entry_computation_name", 2, "string", False),
        ("computations", 3, "HloComputationProto", True),
        ("host_program_shape", 4, "ProgramShapeProto", False),
        ("id", 5, "int64", False),
        ("entry_computation_id", 6, "int64", False),
        ("input_output_alias", 8, "HloInputOutputAliasProto", False),
        ("device_assignment", 15, "DeviceAssignmentProto", False),
        ("stack_frame_index", 17, "StackFrameIndexProto", False),
    ]),
    ("DeviceAssignmentProto", [
        ("replica_count", 1, "int32", False),
        ("computation_count", 2, "int32", False),
    ]),
    ("ProgramShapeProto", [
        ("parameters", 1, "ShapeProto", True),
        ("result", 2, "ShapeProto", False),
        ("parameter_names", 3, "string", True),
    ]),
    ("HloComputationProto", [
        ("name", 1, "string", False),
        ("instructions", 2, "HloInstructionProto", True),
        ("id", 5, "int64", False),
        ("root_id", 6, "int64", False),
        ("is_fusion_computation", 7, "bool", False),
    ]),
    ("HloInstructionProto", [
        ("name", 1, "string", False),
        ("opcode", 2, "string", False),
        ("shape", 3, "ShapeProto", False),
        ("metadata", 7, "OpMetadata", False),
        ("parameter_number", 9, "int64", False),
        ("tuple_index", 13, "int64", False),
        ("custom_call_target", 28, "string", False),
        ("id", 35, "int64", False),
        ("operand_ids", 36, "int64", True),
        ("called_computation_ids", 38, "int64", True),
        ("sharding", 40, "OpSharding", False),
        ("is_host_transfer", 47, "bool", False),
        ("custom_call_has_side_effect", 65, "bool", False),
    ]),
    ("ShapeProto", [
        ("element_type", 2, "int32", False),
        ("dimensions", 3, "int64", True),
        ("tuple_shapes", 4, "ShapeProto", True),
        ("layout", 5, "LayoutProto", False),
    ]),
    ("LayoutProto", [
        ("minor_to_major", 1, "int64", True),
        ("tiles", 6, "TileProto", True),
        ("element_size_in_bits", 7, "int64", False),
        ("memory_space", 8, "int64", False),
    ]),
    ("TileProto", [
        ("dimensions", 1, "int64", True),
    ]),
    ("OpMetadata", [
        ("op_type", 1, "string", False),
        ("op_name", 2, "string", False),
        ("source_file", 3, "string", False),
        ("source_line", 4, "int32", False),
        ("stack_frame_id", 15, "int32", False),
    ]),
    ("OpSharding", [
        ("type", 1, "int32", False),
        ("tile_assignment_dimensions", 3, "int64", True),
        ("tile_assignment_devices", 4, "int64", True),
        ("tuple_shardings", 5, "OpSharding", True),
        ("replicate_on_last_tile_dim", 6, "bool", False),
        ("last_tile_dims", 8, "int32", True),
        ("iota_reshape_dims", 9, "int64", True),
    ]),
    ("StackFrameIndexProto", [
        ("file_names", 1, "string", True),
        ("function_names", 2, "string", True),
        ("file_locations", 3, "FileLocation", True),
        ("stack_frames", 4, "StackFrame", True),
    ]),
    ("FileLocation", [  # StackFrameIndexProto.FileLocation
        ("file_name_id", 1, "int32", False),
        ("function_name_id", 2, "int32", False),
        ("line", 3, "int32", False),
    ]),
    ("StackFrame", [  # StackFrameIndexProto.StackFrame
        ("file_location_id", 1, "int32", False),
        ("parent_frame_id", 2, "int32", False),
    ]),
    ("HloInputOutputAliasProto", [
        ("entries", 1, "AliasEntryProto", True),
    ]),
    ("AliasEntryProto", [  # HloInputOutputAliasProto.AliasEntryProto
        ("output_shape_index", 1, "int64", True),
        ("parameter_number", 2, "int64", False),
        ("parameter_shape_index", 3, "int64", True),
        ("kind", 4, "int32", False),
    ]),
    ("BufferAssignmentProto", [
        ("logical_buffers", 1, "LogicalBufferProto", True),
        ("buffer_aliases", 2, "BufferAlias", True),
        ("buffer_allocations", 3, "BufferAllocationProto", True),
        ("heap_simulator_traces", 4, "HeapSimulatorTrace", True),
    ]),
    ("BufferAlias", [  # BufferAssignmentProto.BufferAlias
        ("source_buffer_id", 1, "int64", False),
        ("location", 2, "Location", False),
    ]),
    ("LogicalBufferProto", [
        ("id", 1, "int64", False),
        ("size", 2, "int64", False),
        ("defined_at", 3, "Location", False),
        ("color", 4, "int64", False),
    ]),
    ("Location", [  # LogicalBufferProto.Location
        ("instruction_name", 2, "string", False),
        ("shape_index", 3, "int64", True),
        ("instruction_id", 4, "int64", False),
    ]),
    ("BufferAllocationProto", [
        ("index", 1, "int64", False),
        ("size", 2, "int64", False),
        ("is_thread_local", 3, "bool", False),
        ("is_entry_computation_parameter", 5, "bool", False),
        ("parameter_number", 6, "int64", False),
        ("maybe_live_out", 7, "bool", False),
        ("color", 8, "int64", False),
        ("assigned", 9, "Assigned", True),
        ("parameter_shape_index", 10, "int64", True),
        ("is_tuple", 11, "bool", False),
        ("is_constant", 12, "bool", False),
        ("is_parameter_aliased_with_output", 13, "bool", False),
    ]),
    ("Assigned", [  # BufferAllocationProto.Assigned
        ("logical_buffer_id", 1, "int64", False),
        ("offset", 2, "int64", False),
        ("size", 3, "int64", False),
    ]),
    ("HeapSimulatorTrace", [
        ("events", 1, "HeapEvent", True),
        ("whole_module_simulation", 2, "bool", False),
        ("buffer_allocation_index", 3, "int64", False),
    ]),
    ("HeapEvent", [  # HeapSimulatorTrace.Event
        ("kind", 1, "int32", False),
        ("buffer_id", 2, "int64", False),
        ("computation_name", 3, "string", False),
        ("instruction_name", 4, "string", False),
        ("share_with_canonical_id", 5, "int64", False),
    ]),
]
"""Nested XLA messages are declared at top level here (``BufferAllocationProto.Assigned`` is ``Assigned``):
the wire format knows only field numbers, so the nesting does not matter to a parse."""

HEAP_ALLOC, HEAP_FREE, HEAP_SHARE_WITH = 0, 1, 2
"""``HeapSimulatorTrace.Event.Kind``."""

PRIMITIVE_TYPES = {
    1: "pred", 30: "s1", 26: "s2", 21: "s4", 2: "s8", 3: "s16", 4: "s32", 5: "s64",
    31: "u1", 27: "u2", 22: "u4", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
    10: "f16", 11: "f32", 16: "bf16", 12: "f64", 19: "f8e5m2", 28: "f8e4m3", 20: "f8e4m3fn",
    23: "f8e4m3b11fnuz", 29: "f8e3m4", 24: "f8e5m2fnuz", 25: "f8e4m3fnuz", 32: "f4e2m1fn", 33: "f8e8m0fnu",
    15: "c64", 18: "c128", 13: "tuple", 14: "opaque", 17: "token", 34: "buffer",
}
"""``xla.PrimitiveType`` number -> XLA's lowercase name (``f32``, ``bf16``)."""

ELEMENT_BITS = {
    "pred": 8, "s1": 1, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "u1": 1, "u2": 2, "u4": 4, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "f16": 16, "f32": 32, "bf16": 16, "f64": 64, "c64": 64, "c128": 128,
    "f8e5m2": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3b11fnuz": 8, "f8e3m4": 8, "f8e5m2fnuz": 8, "f8e4m3fnuz": 8,
    "f4e2m1fn": 4, "f8e8m0fnu": 8,
}
"""Bits per element of each array type (tuples, tokens and opaque types have none)."""


SCHEMA = ProtoSubset("tpudoctor/xla/hlo_subset.proto", PACKAGE,
                     tuple((name, tuple(fields)) for name, fields in MESSAGES))


def file_descriptor():
    return SCHEMA.file_descriptor()


def message_class(name: str) -> type:
    """``message_class("HloProto")`` -> the message class of that subset message."""
    return SCHEMA.message_class(name)


def parse_hlo_proto(data: bytes | bytearray | memoryview) -> Any:
    """An ``xla.HloProto`` message (this subset) from its bytes; protobuf's ``DecodeError`` where they do not
    decode."""
    hlo_proto: Any = message_class("HloProto")
    return hlo_proto.FromString(bytes(data))
