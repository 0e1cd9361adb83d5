"""The compiled XSpace decoder (numba's machine code, cached and loaded with llvmlite) gives the same tables as
the numpy decoder: on real captures, on events whose fields come in another order, and on corrupt bytes."""

from __future__ import annotations

import pandas as pd
import pytest
from paths import TESTS
from profile_oracle import GPU_CAPTURE, TPU_CAPTURE, shared_file

from tpudoctor.captures import wire
from tpudoctor.captures.schema import message_class
from tpudoctor.captures.xspace import LoadOptions, decode_host, decode_host_file, reader
from tpudoctor.captures.xspace import decoder as xspace_decoder
from tpudoctor.captures.xspace.columns import DECODER_ENV
from tpudoctor.errors import InputError

pytest.importorskip("numba")
pytest.importorskip("llvmlite")

FIXTURES = TESTS / "fixtures" / "profiles"
TF_CAPTURE = FIXTURES / "tf_input_bound" / "localhost.xplane.pb"


@pytest.fixture(scope="module", autouse=True)
def _cache_in_a_temporary_folder(tmp_path_factory):
    """The kernels compile once for this module, into a folder of its own (not the user's cache)."""
    from tpudoctor.captures.xspace import compiled

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(compiled.CACHE_ENV, str(tmp_path_factory.mktemp("decoder-cache")))
        compiled.forget()
        yield
    compiled.forget()


def _both(data: bytes, options: LoadOptions | None = None, **kwargs):
    options = options or LoadOptions()
    hosts = []
    for decoder in ("numpy", "jit"):
        chosen = LoadOptions(stats=options.stats, extra_stats=options.extra_stats,
                             metadata_stats=options.metadata_stats, decoder=decoder)
        hosts.append(decode_host(data, hostname="h", source="capture", options=chosen, **kwargs))
    return hosts


def _assert_same(numpy_host, jit_host) -> None:
    for table in ("planes", "lines", "events", "event_metadata"):
        pd.testing.assert_frame_equal(getattr(jit_host, table), getattr(numpy_host, table))
    assert jit_host.plane_stats == numpy_host.plane_stats
    assert jit_host.time_origin_ns == numpy_host.time_origin_ns


@pytest.mark.parametrize("name", [TPU_CAPTURE, GPU_CAPTURE])
@pytest.mark.parametrize("analysis", [False, True], ids=["all-stats", "analysis-stats"])
def test_compiled_decoder_equals_numpy_on_real_captures(name, analysis):
    data = shared_file(name).read_bytes()
    _assert_same(*_both(data, LoadOptions.for_analysis() if analysis else None))


def test_compiled_decoder_plane_by_plane(monkeypatch):
    path = str(TF_CAPTURE)
    whole = decode_host(TF_CAPTURE.read_bytes(), hostname="h", source=path, options=LoadOptions(decoder="numpy"))
    monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    streamed = decode_host_file(path, hostname="h", source=path, options=LoadOptions(decoder="jit"))
    _assert_same(whole, streamed)


def test_compiled_decoder_with_batches_that_split_lines_equals_numpy(monkeypatch):
    """Stat texts are read from each line's own bytes: batches of many lines, and lines split over batches."""
    data = shared_file(GPU_CAPTURE).read_bytes()
    numpy_host = decode_host(data, hostname="h", source="g", options=LoadOptions(decoder="numpy"))
    monkeypatch.setattr(xspace_decoder, "BATCH_EVENTS", 997)
    jit_host = decode_host(data, hostname="h", source="g", options=LoadOptions(decoder="jit"))
    pd.testing.assert_frame_equal(jit_host.events, numpy_host.events)


@pytest.mark.parametrize("name", [TPU_CAPTURE, GPU_CAPTURE])
def test_threaded_decode_equals_serial_with_small_batches(monkeypatch, name):
    """Batches of a few whole lines decoded by three threads at once, merged back in file order: the same tables
    as the serial decode (a batch's rows, its stat arrays' reuse and the order of its stats all count)."""
    import threading

    data = shared_file(name).read_bytes()
    options = LoadOptions(decoder="jit")
    assert xspace_decoder.decode_threads(1000) == 1  # a small capture: no thread
    for cores, threads in ((1, 1), (2, 1), (3, 2), (6, 5), (64, xspace_decoder.MAX_DECODE_THREADS)):
        monkeypatch.setattr(xspace_decoder.os, "sched_getaffinity", lambda pid, n=cores: set(range(n)), raising=False)
        assert xspace_decoder.decode_threads(10 ** 8) == threads  # one core left to the thread that fills the columns
    monkeypatch.setattr(xspace_decoder, "decode_threads", lambda n_events: 1)
    serial = decode_host(data, hostname="h", source="c", options=options)
    monkeypatch.setattr(xspace_decoder, "decode_threads", lambda n_events: 3)
    monkeypatch.setattr(xspace_decoder, "BATCH_EVENTS", 997)  # lines past it: stat arrays grow in a batch
    decoded_on: list[str] = []
    decode_lines = xspace_decoder._decode_lines

    def recorded(*args):
        decoded_on.append(threading.current_thread().name)
        return decode_lines(*args)

    monkeypatch.setattr(xspace_decoder, "_decode_lines", recorded)
    threaded = decode_host(data, hostname="h", source="c", options=options)
    assert sum(thread.startswith("xspace-decode") for thread in decoded_on) > 3
    assert "MainThread" in decoded_on  # a batch whose stats outgrew its arrays: decoded on from where it stopped
    _assert_same(serial, threaded)


@pytest.mark.parametrize("shift", [1 << 15, 1 << 33], ids=["int32", "int64"])
def test_event_metadata_ids_past_int16_widen_the_compiled_decode(shift):
    """The serial compiled decode keeps event metadata ids in int16 until one does not fit: ids past it on the
    capture's later lines (those of earlier lines already decoded narrow) give the numpy decoder's tables, the
    events' metadata rows looked up in a table by id (ids below 2**20) or searched (hashes), none where absent."""
    space = message_class("XSpace").FromString(TF_CAPTURE.read_bytes())
    plane = next(plane for plane in space.planes if len(plane.lines) > 2)
    for key in list(plane.event_metadata):
        plane.event_metadata[key + shift].CopyFrom(plane.event_metadata[key])
        plane.event_metadata[key + shift].id = key + shift
    shifted = 0
    for line in plane.lines[2:]:
        for event in line.events:
            event.metadata_id += shift
            shifted += 1
    assert shifted > 100
    last = plane.lines[len(plane.lines) - 1].events
    last[0].metadata_id, last[1].metadata_id = -5, shift + 999_999  # ids the metadata does not have: no name
    numpy_host, jit_host = _both(space.SerializeToString())
    _assert_same(numpy_host, jit_host)
    assert jit_host.events["metadata_id"].max() >= shift
    assert jit_host.events["name"].isna().sum() >= 2


def test_a_corrupt_line_in_a_threaded_decode_is_a_clear_error(monkeypatch):
    """A line that does not decode, among lines that do, on a decoder thread: the load's clear error, and no thread
    is left running."""
    import threading

    space = message_class("XSpace", raw=True)()
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.stat_metadata[1].name = "step_num"
    plane.event_metadata[1].name = "op"
    good = _field(1, 0, b"\x01") + _field(4, 2, b"\x08\x01\x18\x07")
    bad = _field(1, 0, b"\x01") + _field(4, 2, b"\x05\x08\x01")  # the stat says 5 bytes, 2 follow
    for line_id in range(40):
        events = [bad if line_id == 25 else good] * 50
        plane.lines.append(message_class("XLine", raw=True)(id=line_id, name="l", timestamp_ns=1,
                                                            events=events).SerializeToString())
    monkeypatch.setattr(xspace_decoder, "decode_threads", lambda n_events: 2)
    monkeypatch.setattr(xspace_decoder, "BATCH_EVENTS", 100)
    with pytest.raises(InputError, match="is corrupt"):
        decode_host(space.SerializeToString(), hostname="h", source="x", options=LoadOptions(decoder="jit"))
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("xspace-decode")]


def _field(number: int, wire_type: int, payload: bytes) -> bytes:
    return wire.encode_varint(number << 3 | wire_type) + payload


def _reordered_stat(stat) -> bytes:
    """An XStat with its value before its metadata_id and an unknown field between (same message)."""
    which = stat.WhichOneof("value")
    if which == "double_value":
        import struct

        value = _field(2, 1, struct.pack("<d", stat.double_value))
    elif which in ("str_value", "bytes_value"):
        raw = stat.str_value.encode() if which == "str_value" else stat.bytes_value
        value = _field(5 if which == "str_value" else 6, 2, wire.encode_varint(len(raw)) + raw)
    elif which is not None:
        number = {"uint64_value": 3, "int64_value": 4, "ref_value": 7}[which]
        value = _field(number, 0, wire.encode_varint(getattr(stat, which) & 0xFFFFFFFFFFFFFFFF))
    else:
        value = b""
    return value + _field(15, 0, wire.encode_varint(7)) + _field(1, 0, wire.encode_varint(stat.metadata_id))


def _reordered_event(data: bytes) -> bytes:
    """An XEvent's fields backwards (stats, duration, offset, metadata_id), an unknown field first."""
    event = message_class("XEvent").FromString(data)
    out = _field(14, 2, b"\x02ab")
    for stat in event.stats:
        body = _reordered_stat(stat)
        out += _field(4, 2, wire.encode_varint(len(body)) + body)
    out += _field(3, 0, wire.encode_varint(event.duration_ps))
    if event.WhichOneof("data") == "offset_ps":
        out += _field(2, 0, wire.encode_varint(event.offset_ps))
    return out + _field(1, 0, wire.encode_varint(event.metadata_id))


def test_fields_in_another_order_decode_the_same():
    """protobuf lets a writer put fields in any order: both decoders read such events as the ordered ones."""
    data = TF_CAPTURE.read_bytes()
    raw_space, raw_line = message_class("XSpace", raw=True), message_class("XLine", raw=True)
    space = raw_space.FromString(data)
    changed = 0
    for plane in space.planes:
        lines = []
        for line_bytes in plane.lines:
            line = raw_line.FromString(line_bytes)
            events = [_reordered_event(event) for event in line.events]
            changed += len(events)
            del line.events[:]
            line.events.extend(events)
            lines.append(line.SerializeToString())
        del plane.lines[:]
        plane.lines.extend(lines)
    assert changed > 1000
    ordered = _both(data)
    reordered = _both(space.SerializeToString())
    _assert_same(ordered[0], reordered[0])
    _assert_same(ordered[0], reordered[1])


def test_a_stat_that_runs_past_its_event_is_corrupt_for_both():
    space = message_class("XSpace", raw=True)()
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.stat_metadata[1].name = "step_num"
    plane.event_metadata[1].name = "op"
    event = _field(1, 0, b"\x01") + _field(4, 2, b"\x05\x08\x01")  # the stat says 5 bytes, 2 follow
    line = message_class("XLine", raw=True)(id=1, name="l", timestamp_ns=1, events=[event])
    plane.lines.append(line.SerializeToString())
    for decoder in ("numpy", "jit"):
        with pytest.raises(InputError, match="is corrupt"):
            decode_host(space.SerializeToString(), hostname="h", source="x", options=LoadOptions(decoder=decoder))


def test_auto_takes_the_numpy_decoder_on_small_captures_and_the_cached_one_above():
    from tpudoctor.captures.xspace import compiled

    assert reader.jit_decoder(LoadOptions(decoder="auto"), reader.JIT_MIN_BYTES - 1) is None
    assert reader.jit_decoder(LoadOptions(decoder="numpy"), 1 << 30) is None
    kernels = reader.jit_decoder(LoadOptions(decoder="jit"), 1)
    assert kernels is not None and compiled.is_cached()
    assert reader.jit_decoder(LoadOptions(decoder="auto"), reader.JIT_MIN_BYTES) is kernels


def test_a_damaged_cache_file_is_compiled_again():
    import llvmlite.binding as llvm

    from tpudoctor.captures.xspace import compiled

    compiled.kernels()
    path = compiled._cache_path(llvm)
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])  # LLVM crashes the process on such an object file
    compiled.forget()
    assert compiled.kernels(False) is None  # damaged, and told not to compile
    compiled.forget()
    kernels = compiled.kernels()
    assert kernels is not None and compiled._read_cache(path) is not None  # whole again
    data = TF_CAPTURE.read_bytes()
    _assert_same(*_both(data))


def test_a_decoder_setting_that_is_not_one_is_an_input_error(monkeypatch):
    monkeypatch.setenv(DECODER_ENV, "fast")
    with pytest.raises(InputError, match="TPUDOCTOR_PROFILE_DECODER='fast' is not a profile decoder"):
        LoadOptions()
    monkeypatch.setenv(DECODER_ENV, "numpy")
    assert LoadOptions().decoder == "numpy"
