"""A JAX device memory profile (``jax.profiler.save_device_memory_profile``: pprof, usually gzipped) as a table of
the arrays and executables live on each device when it was taken.

    from tpudoctor.memory.device_profile import read_device_profile
    profile = read_device_profile("memory.prof")
    profile.frame        # one row per sample: device, kind, bytes, count, site, stack
    profile.per_device() # live bytes per device
    profile.top_sites()  # where the bytes were made, largest first

JAX writes one sample per live buffer (``kind`` ``buffer``) and per loaded executable (``executable``), labelled
with its ``device``, valued ``(allocations, count)`` and ``(space, bytes)``, and located at the Python traceback
that made it (the leaf first, as pprof orders a sample's locations). The *site* of a sample is the first frame of
that traceback outside JAX's own packages: the user's line that made the array (the leaf where every frame is
JAX's). Unlike a capture's allocator events, this is a snapshot: what is live now, not a timeline or a peak.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import zlib

import pandas as pd

from tpudoctor.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
INTERNAL_PATHS = ("/jax/", "/jaxlib/", "/flax/core/", "/site-packages/jax", "<frozen ", "/optax/_src/")
"""Frames of these files are the framework's own; a sample's site is the first frame outside them."""
COLUMNS = ("device", "kind", "bytes", "count", "site", "stack")
NO_DEVICE = "(no device)"
MAX_STACK_FRAMES = 12


@dataclasses.dataclass
class DeviceMemoryProfile:
    source: str
    frame: pd.DataFrame
    """``COLUMNS``: one row per sample (``bytes`` and ``count`` from the ``space`` and ``allocations`` values, as
    Python ints, never negative)."""
    sample_types: list[str]
    """``type/unit`` of each sample value, as the profile names them."""
    time_ns: int | None = None

    def per_device(self) -> pd.DataFrame:
        """Per device: ``bytes`` live, ``buffer_bytes`` / ``buffers`` (arrays), ``executable_bytes``, largest first.
        Samples with no device (JAX on CPU labels its executables with none) are left out."""
        f = self.frame[self.frame["device"] != NO_DEVICE]
        buffers = f[f["kind"] != "executable"]
        table = pd.DataFrame({
            "bytes": f.groupby("device")["bytes"].sum(),
            "buffer_bytes": buffers.groupby("device")["bytes"].sum(),
            "buffers": buffers.groupby("device")["count"].sum(),
            "executable_bytes": f[f["kind"] == "executable"].groupby("device")["bytes"].sum(),
        }).fillna(0).astype(object)  # Python ints: a sum past int64 does not wrap
        table.index.name = "device"
        return table.sort_values("bytes", ascending=False, kind="stable").reset_index()

    def top_sites(self, limit: int = 10) -> pd.DataFrame:
        """Where the bytes were made: per (site, kind) the bytes over every device, the arrays, the devices."""
        grouped = self.frame.groupby(["site", "kind"], sort=False).agg(
            bytes=("bytes", "sum"), count=("count", "sum"), devices=("device", "nunique")).reset_index()
        return grouped.sort_values("bytes", ascending=False, kind="stable").head(limit).reset_index(drop=True)


def is_device_profile_name(path: str) -> bool:
    return path.endswith((".prof", ".pprof", ".pb.gz", ".prof.gz"))


def read_device_profile(path: str | os.PathLike, *, source: str | None = None) -> DeviceMemoryProfile:
    source = source or os.fspath(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise InputError(f"cannot read {source}: {exc.strerror or exc}") from None
    return device_profile_from_bytes(data, source=source)


def device_profile_from_bytes(data: bytes, *, source: str) -> DeviceMemoryProfile:
    """The profile in ``data`` (gzipped or not); ``InputError`` when it is empty, corrupt, or not a memory profile."""
    from tpudoctor.captures.pprof_schema import parse_profile

    if not data:
        raise InputError(f"{source} is empty (0 bytes): not a device memory profile",
                         hint="jax.profiler.save_device_memory_profile('memory.prof') writes one")
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{source} is not a readable gzip file: {exc}") from None
    try:
        profile = parse_profile(data)
    except ValueError as exc:
        raise InputError(f"{source} is not a pprof profile: {exc}",
                         hint="pass the file jax.profiler.save_device_memory_profile wrote") from None
    strings = list(profile.string_table)

    def text(index: int) -> str:
        return strings[index] if 0 <= index < len(strings) else ""

    types = [f"{text(t.type)}/{text(t.unit)}" for t in profile.sample_type]
    space = next((i for i, t in enumerate(profile.sample_type) if text(t.unit) == "bytes"), None)
    if space is None or not strings:
        raise InputError(f"{source} is a pprof profile but not a memory profile (its values are {types or 'none'})",
                         hint="jax.profiler.save_device_memory_profile writes one valued in bytes")
    count = next((i for i, t in enumerate(profile.sample_type) if text(t.unit) == "count"), None)
    functions = {f.id: (text(f.name), text(f.filename)) for f in profile.function}
    frames = {loc.id: [_frame(functions.get(line.function_id, ("", "")), line.line) for line in loc.line]
              for loc in profile.location}
    rows = []
    for sample in profile.sample:
        labels = {text(label.key): text(label.str) if label.str else str(label.num) for label in sample.label}
        stack = [frame for loc in sample.location_id for frame in frames.get(loc, [])]
        values = list(sample.value)
        rows.append((labels.get("device") or NO_DEVICE, labels.get("kind", "buffer"),
                     int(values[space]) if space < len(values) else 0,
                     int(values[count]) if count is not None and count < len(values) else 1,
                     _site(stack), " < ".join(f[0] for f in stack[:MAX_STACK_FRAMES])))
    for number, (device, _, size, arrays, *_rest) in enumerate(rows):
        if size < 0 or arrays < 0:
            what, value = ("bytes", size) if size < 0 else ("count", arrays)
            raise InputError(f"{source} is not a memory profile one can read: sample {number} on {device} has a "
                             f"negative {what} value ({value:,}); live memory is never less than none",
                             hint="pass the file jax.profiler.save_device_memory_profile wrote, unchanged")
    # object columns hold Python ints, so sums over samples (each up to int64) never wrap
    frame = pd.DataFrame(rows, columns=list(COLUMNS)).astype({"bytes": object, "count": object})
    return DeviceMemoryProfile(source=source, frame=frame, sample_types=types,
                               time_ns=int(profile.time_nanos) or None)


def _frame(function: tuple[str, str], line: int) -> tuple[str, str]:
    """(``file:line function``, the file) of one traceback frame."""
    name, filename = function
    return (f"{filename}:{line} {name}".strip(), filename)


def _site(stack: list[tuple[str, str]]) -> str:
    for label, filename in stack:
        if filename and not any(part in filename for part in INTERNAL_PATHS):
            return label
    return stack[0][0] if stack else "(no traceback)"
