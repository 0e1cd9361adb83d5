"""Read one host's XSpace (bytes, or a local file) into a ``HostProfile``: check, parse, decode, tabulate.

Bytes are parsed whole by protobuf (``decoder``); a large local file is walked plane by plane and
read line by line (``planes_on_disk``). Whatever cannot be read is an ``InputError`` saying why.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Collection, Iterator, Mapping

from tpudoctor.captures import wire
from tpudoctor.captures.schema import message_class
from tpudoctor.captures.xspace.columns import LoadOptions
from tpudoctor.captures.xspace.decoder import XSpaceDecoder, jit_kernels
from tpudoctor.captures.xspace.host_profile import HostProfile
from tpudoctor.captures.xspace.overlap import importing, spare_cores
from tpudoctor.captures.xspace.planes_on_disk import CaptureFile, layout, planes_on_disk
from tpudoctor.captures.xspace.selection import Selection
from tpudoctor.captures.xspace.tables import build_host_profile
from tpudoctor.errors import InputError

# Smaller files are read whole (one parse; every error message has the whole file). Plane by plane is
# no slower from tens of MB (57 MB GPU capture: 0.19 s vs 0.20 s, peak RSS 268 MB vs 341 MB in process).
STREAM_MIN_BYTES = 16 << 20
DEFAULT_OPTIONS = LoadOptions()
JIT_MIN_BYTES = 4 << 20  # smaller captures decode in less time than the compiled decoder takes to load (~0.05 s)
JIT_COMPILE_MIN_BYTES = 256 << 20  # compiling it (3-5 s, once per machine) pays from about this size


def decode_host(data: bytes, *, hostname: str, source: str, options: LoadOptions = DEFAULT_OPTIONS) -> HostProfile:
    """Decode a serialized XSpace; raises ``InputError`` with the reason when it is not usable."""
    from tpudoctor.captures.validate import check_bytes, explain_parse_failure

    check_bytes(data, source)
    raw_space_class = message_class("XSpace", raw=True)
    try:
        space = raw_space_class.FromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError (and RuntimeError on some builds)
        raise explain_parse_failure(data, source) from exc
    if not any(plane.name for plane in space.planes):  # another protobuf can parse as planes without names
        raise InputError(
            f"{source} is not an XSpace profile: it decodes to no named planes",
            hint="pass a <host>.xplane.pb written by the TensorFlow/JAX profiler",
        )
    file_size_bytes = len(data)
    del data  # parsed: the caller's read of the file need not stay while the events are decoded
    box = {"space": space}  # the decoder drops it once the events are decoded
    chosen = _selection(options)
    decoder = XSpaceDecoder(lambda: chosen(box["space"].planes), list(space.errors), list(space.warnings),
                            release=box.clear, jit=jit_decoder(options, file_size_bytes),
                            whole_bytes_stats=options.whole_bytes_stats)
    del space
    profile = _build(decoder, options, hostname=hostname, source=source, file_size_bytes=file_size_bytes)
    profile.selected_events = chosen.selected_events()
    return profile


def decode_host_file(path: str, *, hostname: str, source: str, options: LoadOptions = DEFAULT_OPTIONS) -> HostProfile:
    """``decode_host`` for a local file, read plane by plane when it is large: the file's bytes and
    protobuf's parse are held for one plane at a time, not for the whole file. The file is opened once; with a
    selection of lines or events (``LoadOptions``), each of its bytes is read once."""
    from tpudoctor.captures.validate import check_bytes

    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        if size < STREAM_MIN_BYTES:
            return decode_host(handle.read(), hostname=hostname, source=source, options=options)
        head = handle.read(1 << 20)
        check_bytes(head, source)  # format and text-copy checks on the head of the file
        capture = CaptureFile(handle, head)
        found = layout(capture, size)
        if found is None:  # not a clean XSpace layout: the whole-file path says exactly what is wrong
            capture.seek(0)
            return decode_host(capture.read(size), hostname=hostname, source=source, options=options)
        planes, errors, warnings = found
        chosen = _selection(options)
        decoder = XSpaceDecoder(lambda: chosen(planes_on_disk(capture, source, planes)), errors, warnings,
                                release=capture.drop_held, jit=jit_decoder(options, size),
                                whole_bytes_stats=options.whole_bytes_stats)
        profile = _build(decoder, options, hostname=hostname, source=source, file_size_bytes=size)
        profile.selected_events = chosen.selected_events()
    if options.planes is None and not profile.planes["plane_name"].astype(bool).any():
        raise InputError(f"{source} is not an XSpace profile: it decodes to no named planes",
                         hint="pass a <host>.xplane.pb written by the TensorFlow/JAX profiler")
    return profile


def read_plane_events(path: str, plane_names: Collection[str], stats: Mapping[str, str], *,
                      event_names: Collection[str] | None = None, source: str | None = None) -> HostProfile:
    """The events of the named planes of a local XSpace file (only those of ``event_names`` when given: the
    others are dropped before they are decoded), each stat of ``stats`` (name -> "int",
    "uint", "float" or "str") a column of ``events`` (missing where an event and its metadata carry
    none; "str" columns categorical): the decoder of ``profile`` for any other reader of a capture's
    events. ``InputError`` where the file is not a readable XSpace."""
    from tpudoctor.captures.xspace.tables import missing_column

    where = source or str(path)
    host = decode_host_file(str(path), hostname="", source=where,
                            options=LoadOptions(stats=dict(stats), planes=frozenset(plane_names),
                                                events=None if event_names is None else frozenset(event_names)))
    for name, kind in stats.items():  # every stat asked for is a column, all-missing where no event has it
        if name not in host.events.columns:
            host.events[name] = missing_column(kind, len(host.events))
    return host


def _selection(options: LoadOptions) -> Selection:
    return Selection(options.planes, options.events, options.lines, options.lines_fallback_stats)


def jit_decoder(options: LoadOptions, size_bytes: int):
    """The compiled decoder where ``options.decoder`` asks for it ("jit"), or lets it ("auto") and the
    capture pays for it: from ``JIT_MIN_BYTES`` where this machine has it compiled already (loading it
    takes milliseconds), from ``JIT_COMPILE_MIN_BYTES`` where it must be compiled first (seconds);
    else None: the numpy decoder."""
    if options.decoder == "numpy" or (options.decoder == "auto" and size_bytes < JIT_MIN_BYTES):
        return None
    if options.decoder == "auto" and size_bytes < JIT_COMPILE_MIN_BYTES:
        return jit_kernels(compile_if_missing=False)
    return jit_kernels()


def _build(decoder: XSpaceDecoder, options: LoadOptions, **where) -> HostProfile:
    try:
        with small_pages(), (importing(("pandas",)) if _import_beside(decoder) else contextlib.nullcontext()):
            return build_host_profile(decoder, options, **where)
    except wire.WireError as exc:
        raise InputError(f"{where['source']} is corrupt: {exc}",
                         hint="the file was damaged after it was written; capture again") from exc


def _import_beside(decoder: XSpaceDecoder) -> bool:
    """Whether a thread imports pandas while the compiled decoder's load runs (``overlap``): where it is not
    imported yet and two cores are free."""
    return decoder.jit is not None and "pandas" not in sys.modules and spare_cores() >= 2


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """numpy's arrays in ordinary (4 KiB) pages while the tables are built, as before afterwards. numpy asks Linux
    for transparent huge pages (2 MiB) for every array of 4 MiB or more, and the first touch of one zeroes all of
    it: a stat column written at a quarter of the events is then wholly in memory, and the kernel's zeroing is
    half the load's CPU. On the 1 GB capture (2026-12-05, 3 pairs at load 2.3-4.2) the load's peak RSS
    1.903-1.914 -> 1.706-1.707 GB, its sys time 2.2-4.0 -> 1.07-1.17 s (``benchmarks/capture_memory.py``). The
    setting is numpy's, for the whole process: another thread's arrays meanwhile are in small pages too."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # a numpy without it: its arrays as they come
        yield
        return
    previous = _set_madvise_hugepage(False)
    try:
        yield
    finally:
        _set_madvise_hugepage(previous)
