"""The subset of pprof's ``Profile`` (``perftools.profiles``, github.com/google/pprof/proto/profile.proto) that a
JAX device memory profile fills: ``jax.profiler.device_memory_profile()`` / ``save_device_memory_profile()``.

Field numbers are pprof's; TensorFlow ships the same message as ``tensorflow.tfprof.pprof.Profile``
(``tsl/profiler/protobuf/profile.proto``), and a test compares them where TensorFlow is installed.
"""

from __future__ import annotations

from tpudoctor.captures.proto_subset import ProtoSubset

PACKAGE = "tpudoctor.pprof"

MESSAGES: list[tuple[str, list[tuple[str, int, str, bool]]]] = [
    ("Profile", [
        ("sample_type", 1, "ValueType", True),
        ("sample", 2, "Sample", True),
        ("location", 4, "Location", True),
        ("function", 5, "Function", True),
        ("string_table", 6, "string", True),
        ("time_nanos", 9, "int64", False),
        ("default_sample_type", 14, "int64", False),
    ]),
    ("ValueType", [
        ("type", 1, "int64", False),
        ("unit", 2, "int64", False),
    ]),
    ("Sample", [
        ("location_id", 1, "uint64", True),
        ("value", 2, "int64", True),
        ("label", 3, "Label", True),
    ]),
    ("Label", [
        ("key", 1, "int64", False),
        ("str", 2, "int64", False),
        ("num", 3, "int64", False),
    ]),
    ("Location", [
        ("id", 1, "uint64", False),
        ("line", 4, "Line", True),
    ]),
    ("Line", [
        ("function_id", 1, "uint64", False),
        ("line", 2, "int64", False),
    ]),
    ("Function", [
        ("id", 1, "uint64", False),
        ("name", 2, "int64", False),
        ("system_name", 3, "int64", False),
        ("filename", 4, "int64", False),
        ("start_line", 5, "int64", False),
    ]),
]

SCHEMA = ProtoSubset("tpudoctor/pprof/profile_subset.proto", PACKAGE,
                     tuple((name, tuple(fields)) for name, fields in MESSAGES))


def profile_class() -> type:
    return SCHEMA.message_class("Profile")


def parse_profile(data: bytes):
    """A ``Profile`` message; ``ValueError`` where ``data`` is not one."""
    return SCHEMA.parse("Profile", data)
