"""``read_plane_events``: the named planes of a real capture, the stats asked for as columns, by the
profile's decoder; the memory events it reads agree with ``captures.memory_events``' table of them."""

from __future__ import annotations

import numpy as np
import pytest
from profile_oracle import GPU_CAPTURE, TPU_CAPTURE, shared_file

from tpudoctor.captures.memory_events import read_memory_events
from tpudoctor.captures.xspace import LoadOptions, decode_host_file, read_plane_events, reader

HOST = "/host:CPU"
MEMORY_EVENT_NAMES = ("MemoryAllocation", "MemoryDeallocation")
MEMORY_STATS = {"bytes_allocated": "int", "bytes_reserved": "int", "bytes_available": "int",
                "peak_bytes_in_use": "int", "requested_bytes": "int", "allocation_bytes": "int", "addr": "uint",
                "tf_op": "str", "shape": "str", "region_type": "str", "fragmentation": "float"}
# memory_events' column for each stat (absent sizes read 0 there, absent texts "")
MEMORY_COLUMN = {"bytes_allocated": "heap_bytes", "bytes_reserved": "stack_bytes", "bytes_available": "free_bytes",
                 "peak_bytes_in_use": "lifetime_peak_bytes", "requested_bytes": "requested_bytes",
                 "allocation_bytes": "allocation_bytes", "addr": "addr", "tf_op": "tf_op", "shape": "shape",
                 "region_type": "region_type", "fragmentation": "fragmentation"}


@pytest.mark.parametrize("plane_by_plane", [False, True], ids=["whole-file", "plane-by-plane"])
def test_memory_events_read_through_the_profile_decoder_equal_memory_events(monkeypatch, plane_by_plane):
    path = shared_file(TPU_CAPTURE)
    if plane_by_plane:
        monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    host = read_plane_events(path, [HOST], MEMORY_STATS)
    assert host.planes["plane_name"].tolist() == [HOST]
    events = host.events
    memory = events[events["name"].isin(["MemoryAllocation", "MemoryDeallocation"])]
    expected = read_memory_events(path).frame
    assert len(memory) == len(expected) == 906
    assert memory["start_ps"].tolist() == expected["time_ps"].tolist()
    assert (memory["name"] == "MemoryAllocation").tolist() == expected["is_allocation"].tolist()
    assert host.line_values("line_id", memory.index.to_numpy()).tolist() == expected["line_id"].tolist()
    for stat, column in MEMORY_COLUMN.items():
        got = memory[stat]
        if MEMORY_STATS[stat] == "str":
            got = got.astype(object).where(got.notna(), "").tolist()
            assert got == expected[column].astype(str).tolist(), stat
        elif MEMORY_STATS[stat] == "float":
            assert np.allclose(got.fillna(0).to_numpy(float), expected[column].to_numpy(float)), stat
        else:
            assert got.fillna(0).astype("uint64").tolist() == expected[column].astype("uint64").tolist(), stat


@pytest.mark.parametrize("plane_by_plane", [False, True], ids=["whole-file", "plane-by-plane"])
def test_memory_events_chosen_by_name_before_decoding_equal_memory_events(monkeypatch, plane_by_plane):
    path = shared_file(TPU_CAPTURE)
    if plane_by_plane:
        monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    host = read_plane_events(path, [HOST], MEMORY_STATS, event_names=MEMORY_EVENT_NAMES)
    expected = read_memory_events(path)
    events, frame = host.events, expected.frame
    assert len(events) == len(frame) == 906  # of the host plane's 19,270 events
    assert host.planes["n_events"].tolist() == [906]
    # each load counts time from its own earliest line with events: the same instants
    assert (events["start_ps"] + host.time_origin_ns * 1000).tolist() == (
        frame["time_ps"] + expected.time_origin_ns * 1000).tolist()
    assert (events["name"] == "MemoryAllocation").tolist() == frame["is_allocation"].tolist()
    for stat in ("bytes_allocated", "addr", "requested_bytes"):
        assert events[stat].fillna(0).astype("uint64").tolist() == frame[MEMORY_COLUMN[stat]].astype(
            "uint64").tolist(), stat
    assert events["tf_op"].astype(object).where(events["tf_op"].notna(), "").tolist() == frame["tf_op"].astype(
        str).tolist()


def test_a_selected_plane_has_the_events_of_the_whole_decode():
    path = shared_file(GPU_CAPTURE)
    stats = {"correlation_id": "uint", "kernel_details": "str"}
    whole = decode_host_file(str(path), hostname="h", source=str(path), options=LoadOptions(stats=stats))
    device_planes = whole.planes[whole.planes["is_device"]]
    device = device_planes.sort_values("n_events")["plane_name"].iloc[-1]
    selected = read_plane_events(path, [device], stats)
    assert selected.planes["plane_name"].tolist() == [device]
    want = whole.events_on(device)
    want_line_id = whole.line_values("line_id", want.index.to_numpy())
    want = want.reset_index(drop=True)
    got = selected.events.reset_index(drop=True)
    assert selected.line_values("line_id").tolist() == want_line_id.tolist()
    assert len(got) == len(want) > 0
    # start_ps counts from each load's own origin (the earliest line with events among the planes read)
    assert (got["start_ps"] + selected.time_origin_ns * 1000).tolist() == (
        want["start_ps"] + whole.time_origin_ns * 1000).tolist()
    for column in ["metadata_id", "duration_ps", "name", "correlation_id", "kernel_details"]:
        assert got[column].astype(object).tolist() == want[column].astype(object).tolist(), column
    assert read_plane_events(path, ["/no such plane"], stats).events.empty


def test_planes_or_events_given_as_one_string_is_a_mistake_not_a_set_of_letters():
    with pytest.raises(ValueError, match="collection of plane names"):
        LoadOptions(planes=HOST)
    with pytest.raises(ValueError, match="collection of event names"):
        LoadOptions(events="MemoryAllocation")


def test_a_program_s_hlo_proto_is_kept_whole_where_asked_for():
    """jit_f's HloProto on /host:metadata is 8,194 bytes: the decoder keeps a long bytes value's size alone
    ("<8194 bytes>") unless the stat is named in ``whole_bytes_stats``, as the memory reader names it."""
    path = str(shared_file(TPU_CAPTURE))
    metadata = decode_host_file(path, hostname="h", source=path, options=LoadOptions(stats={})).event_metadata
    proto = metadata.loc[metadata["name"].str.startswith("jit_f(") & metadata["Hlo Proto"].notna(), "Hlo Proto"]
    assert proto.tolist() == ["<8194 bytes>"]
    whole = decode_host_file(path, hostname="h", source=path,
                             options=LoadOptions(stats={}, whole_bytes_stats={"Hlo Proto"})).event_metadata
    proto = whole.loc[whole["name"].str.startswith("jit_f(") & whole["Hlo Proto"].notna(), "Hlo Proto"].tolist()
    assert len(proto) == 1 and isinstance(proto[0], bytes) and len(proto[0]) == 8194
