"""A subset of a public protobuf schema, declared in Python and built into message classes at first use.

Like ``tpudoctor.captures.schema`` (XSpace): no generated ``*_pb2.py`` and no TensorFlow or jaxlib import, a
descriptor built with ``descriptor_pb2`` in a private pool per schema (so it never clashes with TensorFlow's own
classes in the default pool). Only the fields tpudoctor reads are declared; protobuf keeps the others as unknown
fields and skips them. Each schema's field numbers are checked in the tests against the real descriptors where the
package that ships them is installed.
"""

from __future__ import annotations

import dataclasses
import functools
from functools import cached_property

from google.protobuf import descriptor_pb2, descriptor_pool

_F = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    "int64": _F.TYPE_INT64,
    "uint64": _F.TYPE_UINT64,
    "int32": _F.TYPE_INT32,
    "bool": _F.TYPE_BOOL,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}

Field = tuple[str, int, str, bool]
"""(name, number, type, repeated); a type not in ``SCALARS`` is a message of the same schema."""


@dataclasses.dataclass(frozen=True, eq=False)
class ProtoSubset:
    file_name: str
    package: str
    messages: tuple[tuple[str, tuple[Field, ...]], ...]

    def file_descriptor(self) -> descriptor_pb2.FileDescriptorProto:
        proto = descriptor_pb2.FileDescriptorProto(name=self.file_name, package=self.package, syntax="proto3")
        for message_name, fields in self.messages:
            message = proto.message_type.add(name=message_name)
            for name, number, type_name, repeated in fields:
                field = message.field.add(name=name, number=number)
                field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
                if type_name in SCALARS:
                    field.type = SCALARS[type_name]
                else:
                    field.type = _F.TYPE_MESSAGE
                    field.type_name = f".{self.package}.{type_name}"
        return proto

    @cached_property
    def _pool(self) -> descriptor_pool.DescriptorPool:
        pool = descriptor_pool.DescriptorPool()
        pool.Add(self.file_descriptor())
        return pool

    @functools.cache  # noqa: B019 - a schema lives as long as the process; its classes are built once
    def message_class(self, name: str) -> type:
        """The message class of one message of the subset (built once per schema)."""
        from google.protobuf import message_factory

        descriptor = self._pool.FindMessageTypeByName(f"{self.package}.{name}")
        if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
            return message_factory.GetMessageClass(descriptor)
        return message_factory.MessageFactory(self._pool).GetPrototype(descriptor)  # pragma: no cover - 4.21

    def parse(self, name: str, data: bytes):
        """``data`` as one message of the subset; ``ValueError`` where it is not one (so callers need not import
        protobuf to catch it)."""
        from google.protobuf.message import DecodeError

        try:
            return self.message_class(name).FromString(data)
        except DecodeError as exc:
            raise ValueError(str(exc) or "not a valid protobuf message") from None
