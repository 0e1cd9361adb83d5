"""The XSpace message classes, built at import from a descriptor written in Python.

No generated ``*_pb2.py`` module: a descriptor built with ``descriptor_pb2`` works the same on
protobuf 4.x, 5.x and 7.x, so tpudoctor never breaks on a protobuf upgrade and never needs
TensorFlow. ``xplane.proto`` beside this file is the same schema in .proto form; a test keeps
the two in step.

Two files are built in a private descriptor pool (so they never clash with TensorFlow's own
``tensorflow.profiler`` classes in the default pool):

* ``tensorflow.profiler`` - the published schema, used by tests as a plain-protobuf oracle.
* ``tpudoctor.xplane_raw`` - the same wire format, except that ``XPlane.lines`` and ``XLine.events``
  are declared ``repeated bytes``: protobuf's C parser then finds every line's and event's bytes
  for us (a plane's parse holds its bytes once, not a view per event), and
  ``tpudoctor.profile.decode`` decodes the fields of all events of a line at once with numpy
  instead of building one Python message per event.
"""

from __future__ import annotations

from functools import cache

from google.protobuf import descriptor_pb2, descriptor_pool

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "int64": _F.TYPE_INT64,
    "uint64": _F.TYPE_UINT64,
    "double": _F.TYPE_DOUBLE,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}

# (message, [(field name, number, type, repeated, oneof)]); a type not in _SCALARS is a message
# type, "map:K,V" a map field.
_MESSAGES: list[tuple[str, list[tuple[str, int, str, bool, str | None]]]] = [
    ("XSpace", [
        ("planes", 1, "XPlane", True, None),
        ("errors", 2, "string", True, None),
        ("warnings", 3, "string", True, None),
        ("hostnames", 4, "string", True, None),
    ]),
    ("XPlane", [
        ("id", 1, "int64", False, None),
        ("name", 2, "string", False, None),
        ("lines", 3, "XLine", True, None),
        ("event_metadata", 4, "map:int64,XEventMetadata", True, None),
        ("stat_metadata", 5, "map:int64,XStatMetadata", True, None),
        ("stats", 6, "XStat", True, None),
    ]),
    ("XLine", [
        ("id", 1, "int64", False, None),
        ("display_id", 10, "int64", False, None),
        ("name", 2, "string", False, None),
        ("display_name", 11, "string", False, None),
        ("timestamp_ns", 3, "int64", False, None),
        ("duration_ps", 9, "int64", False, None),
        ("events", 4, "XEvent", True, None),
    ]),
    ("XEvent", [
        ("metadata_id", 1, "int64", False, None),
        ("offset_ps", 2, "int64", False, "data"),
        ("num_occurrences", 5, "int64", False, "data"),
        ("duration_ps", 3, "int64", False, None),
        ("stats", 4, "XStat", True, None),
    ]),
    ("XStat", [
        ("metadata_id", 1, "int64", False, None),
        ("double_value", 2, "double", False, "value"),
        ("uint64_value", 3, "uint64", False, "value"),
        ("int64_value", 4, "int64", False, "value"),
        ("str_value", 5, "string", False, "value"),
        ("bytes_value", 6, "bytes", False, "value"),
        ("ref_value", 7, "uint64", False, "value"),
    ]),
    ("XEventMetadata", [
        ("id", 1, "int64", False, None),
        ("name", 2, "string", False, None),
        ("display_name", 4, "string", False, None),
        ("metadata", 3, "bytes", False, None),
        ("stats", 5, "XStat", True, None),
        ("child_id", 6, "int64", True, None),
    ]),
    ("XStatMetadata", [
        ("id", 1, "int64", False, None),
        ("name", 2, "string", False, None),
        ("description", 3, "string", False, None),
    ]),
]

PUBLISHED_PACKAGE = "tensorflow.profiler"
RAW_PACKAGE = "tpudoctor.xplane_raw"


def _set_type(field: descriptor_pb2.FieldDescriptorProto, type_name: str, package: str) -> None:
    if type_name in _SCALARS:
        field.type = _SCALARS[type_name]
    else:
        field.type = _F.TYPE_MESSAGE
        field.type_name = f".{package}.{type_name}"


def file_descriptor(package: str, *, raw_events: bool = False) -> descriptor_pb2.FileDescriptorProto:
    """The XSpace schema as a FileDescriptorProto; ``raw_events`` makes ``XPlane.lines`` and
    ``XLine.events`` bytes (a plane's parse keeps one copy of its lines' bytes; each line is parsed
    when its events are decoded)."""
    proto = descriptor_pb2.FileDescriptorProto(name=f"{package.replace('.', '/')}/xplane.proto",
                                               package=package, syntax="proto3")
    for message_name, fields in _MESSAGES:
        message = proto.message_type.add(name=message_name)
        oneofs: list[str] = []
        for name, number, type_name, repeated, oneof in fields:
            field = message.field.add(name=name, number=number, json_name=_json_name(name))
            field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            if raw_events and (message_name, name) in (("XLine", "events"), ("XPlane", "lines")):
                type_name = "bytes"
            if type_name.startswith("map:"):
                key_type, value_type = type_name[4:].split(",")
                entry_name = "".join(part.title() for part in name.split("_")) + "Entry"
                entry = message.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                key = entry.field.add(name="key", number=1, label=_F.LABEL_OPTIONAL, json_name="key")
                _set_type(key, key_type, package)
                value = entry.field.add(name="value", number=2, label=_F.LABEL_OPTIONAL, json_name="value")
                _set_type(value, value_type, package)
                field.type = _F.TYPE_MESSAGE
                field.type_name = f".{package}.{message_name}.{entry_name}"
            else:
                _set_type(field, type_name, package)
            if oneof is not None:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    message.oneof_decl.add(name=oneof)
                field.oneof_index = oneofs.index(oneof)
        if message_name == "XLine":
            for number in (5, 6, 7, 8):
                message.reserved_range.add(start=number, end=number + 1)
    return proto


def _json_name(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _message_class(pool: descriptor_pool.DescriptorPool, full_name: str) -> type:
    from google.protobuf import message_factory

    descriptor = pool.FindMessageTypeByName(full_name)
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)  # pragma: no cover - protobuf 4.21


@cache
def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor(PUBLISHED_PACKAGE))
    pool.Add(file_descriptor(RAW_PACKAGE, raw_events=True))
    return pool


def message_class(name: str, *, raw: bool = False) -> type:
    """``message_class("XSpace")`` -> the published message class; ``raw=True`` -> events as bytes."""
    package = RAW_PACKAGE if raw else PUBLISHED_PACKAGE
    return _message_class(_pool(), f"{package}.{name}")
