"""Lines chosen before they are decoded (``LoadOptions.lines``), on the real v6e capture: the other lines keep their
headers but none of their events; and ``tpudoctor memory``'s read of a capture (``read_memory_capture``), which
decodes only what it needs that way, opens the file once, reads each byte once, and finds what a whole decode
finds."""

from __future__ import annotations

import builtins
import os

import numpy as np
import pytest
from profile_oracle import GPU_CAPTURE, TPU_CAPTURE, shared_file

from tpudoctor.captures import memory_capture
from tpudoctor.captures.memory_capture import (
    CAPTURE_STATS,
    HLO_PROTO_STAT,
    memory_capture_of,
    read_memory_capture,
)
from tpudoctor.captures.xspace import LoadOptions, decode_host_file, reader

MODULES = "XLA Modules"
PATHS = pytest.mark.parametrize("plane_by_plane", [False, True], ids=["whole-file", "plane-by-plane"])


def _whole(path: str, **options):
    return decode_host_file(path, hostname="h", source=path, options=LoadOptions(**options))


@PATHS
def test_lines_left_out_keep_their_headers_and_none_of_their_events(monkeypatch, plane_by_plane):
    path = str(shared_file(TPU_CAPTURE))
    whole = _whole(path, stats={"program_id": "uint"})
    if plane_by_plane:
        monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    chosen = _whole(path, stats={"program_id": "uint"}, lines=[MODULES])
    on_modules = whole.lines["line_name"].to_numpy() == MODULES
    # every line is still there, in the same rows; only the XLA Modules lines have events
    assert chosen.lines[["plane_id", "line_id", "line_name", "timestamp_ns"]].equals(
        whole.lines[["plane_id", "line_id", "line_name", "timestamp_ns"]])
    assert chosen.lines["n_events"].tolist() == np.where(on_modules, whole.lines["n_events"], 0).tolist()
    assert len(chosen.events) == int(whole.lines["n_events"][on_modules].sum()) == 414  # of 38,848 events
    rows = np.repeat(on_modules, whole.lines["n_events"].to_numpy())
    want = whole.with_line_columns(whole.events[rows]).reset_index(drop=True)
    got = chosen.with_line_columns().reset_index(drop=True)
    assert (got["start_ps"] + chosen.time_origin_ns * 1000).tolist() == (
        want["start_ps"] + whole.time_origin_ns * 1000).tolist()
    for column in ("plane_id", "line_id", "name", "duration_ps", "program_id"):
        assert got[column].astype(object).tolist() == want[column].astype(object).tolist(), column
    # where the kept events were in the file: every line's count, each event's place in its line
    selected = chosen.selected_events
    assert selected.line_events_in_file.tolist() == whole.lines["n_events"].tolist()
    in_line = np.concatenate([np.arange(n) for n in whole.lines["n_events"][on_modules].tolist()])
    assert selected.position_in_line.tolist() == in_line.tolist()
    assert whole.selected_events is None


@PATHS
def test_lines_and_events_chosen_together_keep_either(monkeypatch, plane_by_plane):
    path = str(shared_file(TPU_CAPTURE))
    whole = _whole(path, stats={})
    if plane_by_plane:
        monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    chosen = _whole(path, stats={}, lines=[MODULES], events=["MemoryAllocation"])
    line_of = np.repeat(whole.lines["line_name"].to_numpy(), whole.lines["n_events"].to_numpy())
    kept = (line_of == MODULES) | (whole.events["name"] == "MemoryAllocation").to_numpy()
    assert 414 < len(chosen.events) == int(kept.sum())
    assert chosen.events["name"].astype(str).tolist() == whole.events["name"][kept].astype(str).tolist()
    positions = np.concatenate([np.arange(n) for n in whole.lines["n_events"].tolist()])[kept]
    assert chosen.selected_events.position_in_line.tolist() == positions.tolist()


def test_line_names_given_as_one_string_is_a_mistake_not_a_set_of_letters():
    with pytest.raises(ValueError, match="collection of line names"):
        LoadOptions(lines=MODULES)


class _CountedReads:
    """The opens of one file and the bytes read from them, by every reader in this process."""

    def __init__(self, monkeypatch, path: str):
        self.path, self.opens, self.bytes_read = os.path.realpath(path), 0, 0
        real_open = builtins.open
        counter = self

        class Counted:
            def __init__(self, handle):
                self._handle = handle

            def read(self, *size):
                data = self._handle.read(*size)
                counter.bytes_read += len(data)
                return data

            def __getattr__(self, name):
                return getattr(self._handle, name)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self._handle.close()

        def counting_open(file, *args, **kwargs):
            handle = real_open(file, *args, **kwargs)
            if isinstance(file, (str, os.PathLike)) and os.path.realpath(file) == self.path:
                counter.opens += 1
                return Counted(handle)
            return handle

        monkeypatch.setattr(builtins, "open", counting_open)


@pytest.mark.parametrize("large", [False, True], ids=["small-file", "large-file"])
def test_the_memory_read_opens_the_capture_once_and_reads_each_byte_once(monkeypatch, large):
    """A large file (from 64 MB, where the memory read went plane by plane) was opened 3 + 2 x planes times (17
    here), its plane headers and lines read twice; the thresholds are lowered so that the real 0.86 MB capture
    takes that path."""
    path = str(shared_file(TPU_CAPTURE))
    if large:
        monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
        # the memory read's own whole-file threshold before (64 MB); it reads as every other reader now
        monkeypatch.setattr(memory_capture, "WHOLE_FILE_MAX_BYTES", 0, raising=False)
    counted = _CountedReads(monkeypatch, path)
    capture = read_memory_capture(path)
    assert len(capture.events) == 906 and len(capture.runs) == 414 and len(capture.hlo_protos) > 0
    assert counted.opens == 1
    assert os.path.getsize(path) <= counted.bytes_read <= os.path.getsize(path) + 64 * 1024  # + the field heads


@pytest.mark.parametrize("capture", [TPU_CAPTURE, GPU_CAPTURE], ids=["tpu", "gpu"])
@PATHS
def test_the_memory_read_finds_what_a_whole_decode_finds(monkeypatch, capture, plane_by_plane):
    path = str(shared_file(capture))
    whole = memory_capture_of(_whole(path, stats=dict(CAPTURE_STATS), whole_bytes_stats={HLO_PROTO_STAT}), path)
    if plane_by_plane:
        monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    read = read_memory_capture(path)
    assert len(read.events) > 0
    assert read.events.frame.equals(whole.events.frame)
    for column in ("allocator", "tf_op", "shape", "dtype", "region_type"):  # the categories' order too
        assert read.events.frame[column].cat.categories.tolist() == whole.events.frame[column].cat.categories.tolist()
    assert read.events.time_origin_ns == whole.events.time_origin_ns
    assert read.runs == whole.runs and read.hlo_protos == whole.hlo_protos


@pytest.mark.parametrize("capture", [TPU_CAPTURE, GPU_CAPTURE], ids=["tpu", "gpu"])
def test_the_text_order_counts_each_event_s_place_among_all_its_line_s_events(monkeypatch, capture):
    """The memory events' text categories are ordered by the run of ``TEXT_BATCH_EVENTS`` of its line's events each
    value first occurs in: with runs of 64, the places of the events left out decide that order (on the GPU
    capture; counted among the kept events alone, its tf_op categories come out in another order)."""
    from tpudoctor.captures import memory_events

    monkeypatch.setattr(memory_events, "TEXT_BATCH_EVENTS", 64)
    path = str(shared_file(capture))
    whole = memory_capture_of(_whole(path, stats=dict(CAPTURE_STATS), whole_bytes_stats={HLO_PROTO_STAT}), path)
    read = read_memory_capture(path)
    for column in ("tf_op", "shape", "region_type"):
        assert read.events.frame[column].cat.categories.tolist() == whole.events.frame[column].cat.categories.tolist()
    assert read.events.frame.equals(whole.events.frame)


def test_memory_times_count_from_the_earliest_host_line_with_events_in_the_file(tmp_path):
    """The real v6e capture with one host line that holds no memory event started 0.1 ms earlier: the memory events'
    origin is that line's timestamp, as in a whole decode, though none of its events is decoded."""
    from tpudoctor.captures.schema import message_class

    space = message_class("XSpace", raw=True).FromString(shared_file(TPU_CAPTURE).read_bytes())
    host = next(plane for plane in space.planes if plane.name == "/host:CPU")
    memory_ids = {key for key, meta in host.event_metadata.items() if meta.name.startswith("Memory")}
    event_class = message_class("XEvent")
    for index, line_bytes in enumerate(host.lines):
        line = message_class("XLine", raw=True).FromString(line_bytes)
        if line.events and not any(event_class.FromString(e).metadata_id in memory_ids for e in line.events):
            line.timestamp_ns -= 100_000
            host.lines[index] = line.SerializeToString()
            break
    path = tmp_path / "earlier_line.xplane.pb"
    path.write_bytes(space.SerializeToString())
    whole = memory_capture_of(_whole(str(path), stats=dict(CAPTURE_STATS), whole_bytes_stats={HLO_PROTO_STAT}),
                              str(path))
    read = read_memory_capture(path)
    assert read.events.time_origin_ns == whole.events.time_origin_ns == line.timestamp_ns
    assert read.events.frame.equals(whole.events.frame)
