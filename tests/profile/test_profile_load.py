"""The columnar XSpace loader agrees with a plain protobuf parse, on real captures and built ones."""

from __future__ import annotations

import dataclasses
import math
import pickle
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import TESTS
from profile_oracle import GPU_CAPTURE, TPU_CAPTURE, oracle_events, real_captures, shared_file

import tpudoctor.profile
from tpudoctor.captures import xspace
from tpudoctor.captures.schema import _MESSAGES, message_class
from tpudoctor.captures.xspace import (
    EVENT_STAT_COLUMNS,
    LoadOptions,
    decode_host,
    decoder,
    lookup,
    tables,
)

XSpace = message_class("XSpace")


def assert_matches_oracle(data: bytes) -> pd.DataFrame:
    events = decode_host(data, hostname="h", source="test").with_line_columns()  # each event's line's columns too
    expected = oracle_events(data)
    assert len(events) == len(expected)
    for column in ["plane_id", "line_id", "metadata_id", "duration_ps", "start_ps", "name", "line_name",
                   "plane_name", *EVENT_STAT_COLUMNS]:
        if column not in events.columns:  # a stat the capture never has is no column (core ones always are)
            assert column not in xspace.CORE_STAT_COLUMNS
            assert all(row[column] is None for row in expected), column
            continue
        got = events[column].astype(object).where(events[column].notna(), None).tolist()
        want = [_as_column_kind(row[column], EVENT_STAT_COLUMNS.get(column)) for row in expected]
        for index, (g, w) in enumerate(zip(got, want, strict=True)):
            if isinstance(w, float) and isinstance(g, (int, float)):
                assert math.isclose(g, w, rel_tol=1e-12) or g == int(w), (column, index, g, w)
            elif isinstance(w, bytes):
                assert g == w.decode("utf-8", "replace"), (column, index, g, w)
            else:
                assert g == w, (column, index, g, w)
    return events


def assert_sparse_stats_equal_columns(data: bytes, names: list[str]) -> None:
    """Stats kept only where present (``LoadOptions.sparse_stats``) read at any rows as their columns do."""
    dense = decode_host(data, hostname="h", source="t")
    sparse = decode_host(data, hostname="h", source="t", options=LoadOptions(sparse_stats=names))
    # a text stat on many events at rows of its own stays a column (its codes are smaller than row numbers)
    assert {name for name in names if EVENT_STAT_COLUMNS[name] != "str"} <= set(sparse.sparse_stats)
    columns = [name for name in sparse.sparse_stats if name in dense.events.columns]
    pd.testing.assert_frame_equal(sparse.events, dense.events.drop(columns=columns))
    every_row = np.arange(len(dense.events))
    some_rows = np.r_[every_row[::-2], every_row[:3], every_row[-1:]]  # unsorted, repeated
    for name in sparse.sparse_stats:
        assert sparse.has_stat(name) and name not in sparse.events.columns
        if name not in columns:  # no event has it: every row missing
            assert sparse.stat_at(name, every_row).isna().all()
            continue
        column = dense.events[name].array
        for rows in (every_row, some_rows, sparse.rows_with(name)):
            pd.testing.assert_extension_array_equal(sparse.stat_at(name, rows), column.take(rows))
        np.testing.assert_array_equal(sparse.rows_with(name), np.flatnonzero(~column.isna()))


def _as_column_kind(value, kind):
    """Integer stats keep their 64 bits: ids ("uint") read unsigned, counts ("int") signed."""
    if isinstance(value, (str, bytes)) and kind in ("int", "uint", "float"):
        return None  # text is not a number
    if isinstance(value, (int, float)) and kind == "str":
        return repr(value)  # a number in a text column reads as its Python repr
    if isinstance(value, int) and kind == "uint":
        return value & (2**64 - 1)
    if isinstance(value, int) and kind == "int" and value >= 2**63:
        return value - 2**64
    if isinstance(value, float) and kind in ("int", "uint"):  # truncated when it fits, else missing
        low, high = (0, 2**64) if kind == "uint" else (-(2**63), 2**63)
        return int(value) if low <= value < high and float(high) != value else None
    return value


def test_proto_file_and_python_descriptor_agree():
    text = resources.files("tpudoctor.captures").joinpath("xplane.proto").read_text()
    declared = {}
    for name, body in re.findall(r"message (\w+) \{(.*?)\n\}", text, flags=re.S):
        declared[name] = sorted((field, int(number)) for field, number in re.findall(r"(\w+) = (\d+);", body))
    built = {name: sorted((field, number) for field, number, *_ in fields) for name, fields in _MESSAGES}
    assert declared == built


@pytest.mark.parametrize("name", [TPU_CAPTURE, GPU_CAPTURE])
def test_real_capture_matches_plain_protobuf_parse(name):
    data = shared_file(name).read_bytes()
    events = assert_matches_oracle(data)
    assert len(events) > 10_000


def test_every_real_capture_has_line_counts_of_plain_parse():
    captures = real_captures()
    if not captures:
        pytest.skip("../shared/data is absent: no real captures to read")
    for path in captures:
        data = path.read_bytes()
        host = decode_host(data, hostname=path.name, source=str(path))
        space = XSpace.FromString(data)
        expected = [(index, line.id, len(line.events)) for index, plane in enumerate(space.planes)
                    for line in plane.lines]
        assert list(host.lines[["plane_id", "line_id", "n_events"]].itertuples(index=False, name=None)) == expected
        counted = host.with_line_columns().groupby(["plane_id", "line_id"]).size()
        for plane_id, line_id, count in expected:
            assert counted.get((plane_id, line_id), 0) == count, (path.name, plane_id, line_id)
        assert host.planes["n_events"].tolist() == [sum(len(line.events) for line in plane.lines)
                                                     for plane in space.planes]


def test_tpu_capture_facts_from_the_research_notes():
    capture = tpudoctor.profile.load(shared_file(TPU_CAPTURE))
    host = capture.hosts["xprof_tpu_inference_2"]
    assert host.planes["device_kind"].iloc[0] == "TPU v6 Lite"
    assert host.plane_stats[0]["peak_teraflops_per_second"] == pytest.approx(918, rel=0.01)
    ops = host.events_on("/device:TPU:0", "XLA Ops")
    by_category = ops.groupby("hlo_category", observed=True)["duration_ps"].agg(["count", "sum"])
    assert by_category.loc["copy-done", "count"] == 600
    assert by_category.loc["copy-done", "sum"] / 1e12 == pytest.approx(76.0, abs=0.1)
    assert by_category.loc["all-reduce", "count"] == 3
    modules = host.events_on("/device:TPU:0", "XLA Modules")
    assert modules["name"].astype(str).str.startswith("jit_").all()
    assert (host.line_values("plane_name", host.events_on("/host:CPU").index.to_numpy()) == "/host:CPU").all()
    assert len(host.events_on("/host:CPU")) == 19_270
    for plane_name in host.planes["plane_name"]:
        for line_name in [None, *host.lines["line_name"].unique()[:8]]:
            selected = host.events_on(plane_name, line_name)
            mask = host.line_values("plane_name") == plane_name
            if line_name is not None:
                mask = mask & (host.line_values("line_name") == line_name)
            pd.testing.assert_frame_equal(selected, host.events[np.asarray(mask, dtype=bool)])
    # program ids above 2**63 stay exact
    assert ops["program_id"].dropna().astype("uint64").max() > 2**63
    assert not capture.notes  # it has device planes


def _space_with_every_stat_kind() -> bytes:
    space = XSpace()
    plane = space.planes.add(id=7, name="/device:TPU:0")
    for stat_id, name in [(1, "step_num"), (2, "flops"), (3, "hlo_category"), (4, "program_id"), (5, "tf_op"),
                          (6, "device_duration_ps"), (9, "fusion"), (10, "kernel_details"), (11, "source")]:
        plane.stat_metadata[stat_id].id = stat_id
        plane.stat_metadata[stat_id].name = name
    metadata = plane.event_metadata[3]
    metadata.id, metadata.name = 3, "%fusion.1"
    metadata.stats.add(metadata_id=3, ref_value=9)  # ref: the category is stat 9's *name*
    metadata.stats.add(metadata_id=2, uint64_value=123456789)
    metadata.stats.add(metadata_id=4, uint64_value=2**64 - 5)
    metadata.stats.add(metadata_id=5, str_value="jit(f)/mul")
    metadata.stats.add(metadata_id=11, bytes_value=b"f.py:3")
    line = plane.lines.add(id=1, name="XLA Ops", timestamp_ns=10)
    line.events.add(metadata_id=3, offset_ps=5, duration_ps=7)
    event = line.events.add(metadata_id=3, offset_ps=20, duration_ps=2**40)
    event.stats.add(metadata_id=1, int64_value=-3)
    event.stats.add(metadata_id=2, double_value=2.5)  # the event's own value wins over its metadata's
    event.stats.add(metadata_id=5, str_value="överride ✓")
    event.stats.add(metadata_id=10, ref_value=999)  # a dangling ref
    event.stats.add(metadata_id=77, int64_value=1)  # a stat without metadata
    line.events.add(metadata_id=404, num_occurrences=3)  # unknown metadata id, no offset
    plane.lines.add(id=2, name="empty")
    host_plane = space.planes.add(id=0, name="/host:CPU")
    host_plane.lines.add(id=5, name="main", timestamp_ns=2).events.add(metadata_id=1, offset_ps=1, duration_ps=1)
    return space.SerializeToString()


def test_every_stat_kind_and_ref_indirection():
    data = _space_with_every_stat_kind()
    events = assert_matches_oracle(data)
    assert events["hlo_category"].tolist()[:2] == ["fusion", "fusion"]
    assert events["step_num"].tolist()[:2] == [pd.NA, -3]
    assert events["flops"].tolist()[:2] == [123456789, 2]
    assert events["program_id"].iloc[0] == 2**64 - 5
    assert events["tf_op"].tolist()[:2] == ["jit(f)/mul", "överride ✓"]
    assert events["start_ps"].tolist() == [8005, 8020, 8000, 1]  # origin: the earliest line, 2 ns
    assert pd.isna(events["name"].iloc[2])


def test_batches_split_lines_without_changing_results(monkeypatch):
    data = _space_with_every_stat_kind()
    whole = decode_host(data, hostname="h", source="t").events
    monkeypatch.setattr(decoder, "BATCH_EVENTS", 2)
    monkeypatch.setattr(tables, "METADATA_FILL_CHUNK", 3)
    split = decode_host(data, hostname="h", source="t").events
    pd.testing.assert_frame_equal(whole, split)


def test_metadata_rows_found_alike_by_dense_table_and_binary_search(monkeypatch):
    data = _space_with_every_stat_kind()
    dense = decode_host(data, hostname="h", source="t").events
    monkeypatch.setattr(lookup.RowLookup, "DENSE_MAX_CELLS", 1)  # ids too sparse for a table
    searched = decode_host(data, hostname="h", source="t").events
    pd.testing.assert_frame_equal(dense, searched)
    assert dense["name"].notna().any() and dense["hlo_category"].notna().any()


def test_metadata_stats_read_from_the_metadata_equal_the_column_they_replace():
    data = shared_file(TPU_CAPTURE).read_bytes()  # XLA's op facts are on the TPU ops' metadata
    full = decode_host(data, hostname="h", source="t")
    narrow = decode_host(data, hostname="h", source="t", options=LoadOptions(metadata_stats=xspace.METADATA_STATS))
    assert narrow.metadata_stats == set(xspace.METADATA_STATS)
    rows = np.arange(0, len(full.events), 3)
    for name in xspace.METADATA_STATS:
        assert name not in narrow.events.columns and full.events[name].notna().any()
        pd.testing.assert_extension_array_equal(narrow.stat_at(name, rows), full.events[name].array.take(rows))
    assert narrow.stat_at("no_such_stat", rows) is None


def test_device_op_stats_kept_where_present_read_as_their_columns_at_a_fraction_of_the_bytes():
    data = shared_file(TPU_CAPTURE).read_bytes()
    dense = decode_host(data, hostname="h", source="t", options=LoadOptions(stats=xspace.ANALYSIS_STAT_COLUMNS))
    analysis = decode_host(data, hostname="h", source="t", options=LoadOptions.for_analysis())
    assert set(analysis.sparse_stats) == set(xspace.DEVICE_OP_STATS)
    n = len(dense.events)
    for name in xspace.DEVICE_OP_STATS:  # on the ops only: at most about a quarter of the events
        rows = analysis.rows_with(name)
        assert 0 < len(rows) < 0.3 * n and name not in analysis.events.columns
        np.testing.assert_array_equal(rows, np.flatnonzero(dense.events[name].notna()))
        for at in (rows, np.arange(n), np.arange(n)[::-7], np.arange(rows[0], rows[0] + 50)):
            pd.testing.assert_extension_array_equal(analysis.stat_at(name, at), dense.events[name].array.take(at))
    stats = analysis.sparse_stats
    assert stats["program_id"].codes.dtype == np.int8  # a few 64-bit hashes, as codes
    assert stats["device_offset_ps"].rows is stats["device_duration_ps"].rows
    assert stats["hlo_category"].rows is stats["program_id"].rows  # both from the ops' metadata
    # 31 bytes per event as columns; a few where kept at the events that carry them
    dense_bytes = dense.events[list(xspace.DEVICE_OP_STATS)].memory_usage(index=False).sum()
    arrays = {id(a): a for stat in stats.values() for a in (stat.rows, stat.values, stat.codes) if a is not None}
    sparse_bytes = sum(array.nbytes for array in arrays.values() if array.dtype != object)
    assert dense_bytes / n >= 30 and sparse_bytes / n < 7


def test_a_stat_an_event_carries_itself_stays_a_column():
    events_own_flops = decode_host(_space_with_every_stat_kind(), hostname="h", source="t",
                                   options=LoadOptions(metadata_stats=xspace.METADATA_STATS))
    assert "flops" not in events_own_flops.metadata_stats
    assert events_own_flops.events["flops"].tolist()[:2] == [123456789, 2]  # the event's own 2.5 wins
    assert events_own_flops.stat_at("flops", np.array([1])).tolist() == [2]


def test_core_columns_without_values_are_missing_everywhere_other_stats_are_left_out():
    events = decode_host(_space_with_every_stat_kind(), hostname="h", source="t").events
    assert events["group_id"].isna().all() and events["group_id"].dtype == "Int64"
    assert events["long_name"].isna().all()
    assert set(xspace.CORE_STAT_COLUMNS) <= set(events.columns)
    assert "correlation_id" not in events.columns and "run_id" not in events.columns


_int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_uint64 = st.integers(min_value=0, max_value=2**64 - 1)
_stat_value = st.one_of(
    st.tuples(st.just("int64_value"), _int64), st.tuples(st.just("uint64_value"), _uint64),
    st.tuples(st.just("double_value"), st.floats(allow_nan=False, allow_infinity=False)),
    st.tuples(st.just("str_value"), st.text(max_size=12)), st.tuples(st.just("ref_value"), st.integers(1, 6)),
)
_stat = st.tuples(st.integers(1, 6), _stat_value)
_event = st.tuples(st.integers(0, 5), st.integers(0, 2**50), st.integers(0, 2**45), st.lists(_stat, max_size=4))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.lists(_event, max_size=6), max_size=3), min_size=1, max_size=3), st.integers(1, 4))
def test_random_captures_match_plain_protobuf(planes, batch):
    names = ["step_num", "flops", "hlo_category", "program_id", "tf_op", "group_id"]
    space = XSpace()
    for plane_index, lines in enumerate(planes):
        plane = space.planes.add(id=plane_index, name=f"/device:TPU:{plane_index}")
        for stat_id, name in enumerate(names, start=1):
            plane.stat_metadata[stat_id].id = stat_id
            plane.stat_metadata[stat_id].name = name
        for meta_id in range(1, 4):
            plane.event_metadata[meta_id].id = meta_id
            plane.event_metadata[meta_id].name = f"op{meta_id}"
            plane.event_metadata[meta_id].stats.add(metadata_id=3, str_value=f"cat{meta_id}")
        for line_index, events in enumerate(lines):
            line = plane.lines.add(id=line_index, name=f"line{line_index}", timestamp_ns=line_index * 1000)
            for metadata_id, offset, duration, stats in events:
                event = line.events.add(metadata_id=metadata_id, offset_ps=offset, duration_ps=duration)
                for stat_id, (field, value) in stats:
                    event.stats.add(metadata_id=stat_id, **{field: value})
    original = decoder.BATCH_EVENTS, tables.METADATA_FILL_CHUNK
    decoder.BATCH_EVENTS = tables.METADATA_FILL_CHUNK = batch
    try:
        assert_matches_oracle(space.SerializeToString())
        # the same messages with every event's and stat's fields in reverse order (valid protobuf,
        # not how the profiler writes them): the decoder's field-by-field fallback
        assert_matches_oracle(_fields_reversed(space.SerializeToString()))
        for plane in space.planes:  # and an op whose metadata has a program_id, that its events without one take
            plane.event_metadata[2].stats.add(metadata_id=4, uint64_value=2**63 + plane.id)
        assert_sparse_stats_equal_columns(space.SerializeToString(),
                                          ["step_num", "flops", "program_id", "group_id", "hlo_category", "tf_op"])
    finally:
        decoder.BATCH_EVENTS, tables.METADATA_FILL_CHUNK = original


def _fields(data: bytes) -> list[bytes]:
    """The wire-format fields of one message, each as its bytes (tag, length and payload)."""
    from tpudoctor.captures.wire import read_varint

    fields, position = [], 0
    while position < len(data):
        tag, after = read_varint(data, position)
        wire_type = tag & 7
        if wire_type == 0:
            _, end = read_varint(data, after)
        elif wire_type == 2:
            length, payload = read_varint(data, after)
            end = payload + length
        else:
            end = after + (8 if wire_type == 1 else 4)
        fields.append(data[position:end])
        position = end
    return fields


def _fields_reversed(data: bytes) -> bytes:
    """A serialized XSpace whose events (and their stats) list their fields last to first."""
    from tpudoctor.captures.wire import encode_varint, read_varint

    def reversed_stat(field: bytes) -> bytes:  # an event's field 4 (a stat): reverse the stat's own fields
        _, payload = read_varint(field, 1)
        body = b"".join(reversed(_fields(field[payload:])))
        return field[:1] + encode_varint(len(body)) + body

    space, line_class = message_class("XSpace", raw=True).FromString(data), message_class("XLine", raw=True)
    for plane in space.planes:
        lines = []
        for line_bytes in plane.lines:
            line = line_class.FromString(line_bytes)
            events = [b"".join(reversed([reversed_stat(f) if f[0] == 0x22 else f for f in _fields(event)]))
                      for event in line.events]
            del line.events[:]
            line.events.extend(events)
            lines.append(line.SerializeToString())
        del plane.lines[:]
        plane.lines.extend(lines)
    return space.SerializeToString()




def test_load_of_gpu_capture_reports_device_kind_and_hostname():
    capture = tpudoctor.profile.load(shared_file(GPU_CAPTURE))
    (host,) = capture.hosts.values()
    kinds = set(host.planes.loc[host.planes["is_device"], "device_kind"])
    assert kinds == {"GPU (compute capability 7.0)"}
    assert host.events["kernel_details"].notna().any()  # a ref_value stat on GPU kernels
    assert np.issubdtype(host.events["start_ps"].dtype, np.integer)


def test_load_options_keep_the_defaults_in_one_place_and_refuse_an_unknown_kind():
    assert LoadOptions().columns == EVENT_STAT_COLUMNS and LoadOptions().metadata_stats == frozenset()
    analysis = LoadOptions.for_analysis({"device_ordinal": "int"})
    assert analysis.columns == {**xspace.ANALYSIS_STAT_COLUMNS, "device_ordinal": "int"}
    assert analysis.metadata_stats == frozenset(xspace.METADATA_STATS)
    assert pickle.loads(pickle.dumps(analysis)) == analysis  # it travels to worker processes
    with pytest.raises(dataclasses.FrozenInstanceError):
        analysis.stats = {}
    with pytest.raises(ValueError, match="kind must be one of"):
        LoadOptions(extra_stats={"device_ordinal": "text"})


def test_extra_stats_become_columns_of_a_load():
    capture_dir = TESTS / "fixtures" / "profiles" / "jax_steady"
    plain = tpudoctor.profile.load(capture_dir).hosts["localhost"].events
    extra = tpudoctor.profile.load(capture_dir, options=LoadOptions(extra_stats={"device_ordinal": "int", "_src": "str"}))
    events = extra.hosts["localhost"].events
    carrying = _events_carrying(capture_dir / "localhost.xplane.pb", ("device_ordinal", "_src"))
    assert "device_ordinal" not in plain.columns
    assert events["device_ordinal"].notna().sum() == carrying["device_ordinal"] > 0
    assert events["_src"].notna().sum() == carrying["_src"] > 0 and events["_src"].dtype == "category"
    pd.testing.assert_frame_equal(events[list(plain.columns)], plain)


def _events_carrying(path: Path, names: tuple[str, ...]) -> dict[str, int]:
    """Events that carry each stat, counted on plain protobuf messages."""
    counts = dict.fromkeys(names, 0)
    for plane in XSpace.FromString(path.read_bytes()).planes:
        stat_names = {key: value.name for key, value in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                for name in {stat_names.get(stat.metadata_id) for stat in event.stats} & set(names):
                    counts[name] += 1
    return counts


def _field(number: int, value: int | bytes) -> bytes:
    """One wire-format field: a varint, or length-delimited bytes (a double is 8 raw bytes, field 2)."""
    from tpudoctor.captures.wire import encode_varint

    if isinstance(value, int):
        return encode_varint(number << 3) + encode_varint(value)
    if number == 2 and len(value) == 8:  # XStat.double_value: fixed64
        return encode_varint(number << 3 | 1) + value
    return encode_varint(number << 3 | 2) + encode_varint(len(value)) + value


def test_stats_of_other_names_are_skipped_before_their_values_and_no_column_changes():
    """Stats not asked for are dropped unread only where their leading metadata_id is their name."""
    names = {1: "step_num", 2: "_p", 3: "queue_id", 4: "tf_op"}
    stats = [
        [_field(1, 1) + _field(4, 5), _field(1, 2) + _field(3, 2**64 - 3), _field(1, 3)],  # wanted, 10-byte, id only
        [_field(1, 2) + _field(4, 7) + _field(1, 1)],  # names _p first, then step_num: the last id wins
        [_field(5, b"ab") + _field(1, 3), _field(1, 4) + _field(7, 3)],  # value before id; a ref to a stat name
        [_field(1, 3) + _field(5, b"xyz"), _field(1, 9) + _field(4, 5), _field(1, 2) + _field(2, b"\x00" * 7 + b"\x40"),
         _field(1, 1) + _field(3, 2**63 + 1)],  # text, an unknown id and a double not asked for; a uint64 step
    ]
    space = message_class("XSpace", raw=True)()
    plane = space.planes.add(id=0, name="/device:TPU:0")
    for stat_id, name in names.items():
        plane.stat_metadata[stat_id].id = stat_id
        plane.stat_metadata[stat_id].name = name
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = "op"
    line = message_class("XLine", raw=True)(id=1, name="XLA Ops", timestamp_ns=1000)
    for offset, event_stats in enumerate(stats):
        line.events.append(_field(1, 1) + _field(2, offset * 10) + _field(3, 5)
                           + b"".join(_field(4, stat) for stat in event_stats))
    plane.lines.append(line.SerializeToString())
    data = space.SerializeToString()
    narrow = decode_host(data, hostname="h", source="t", options=LoadOptions(stats={"step_num": "int", "tf_op": "str"}))
    full = decode_host(data, hostname="h", source="t").events
    expected = oracle_events(data)  # an int column keeps a uint64 value's 64 bits
    assert [None if e["step_num"] is None else e["step_num"] - (e["step_num"] >> 63 << 64) for e in expected] == [
        5, 7, None, -(2**63) + 1]
    assert [None if v is pd.NA else v for v in narrow.events["step_num"].tolist()] == [5, 7, None, -(2**63) + 1]
    assert [e["tf_op"] for e in expected] == [None, None, "queue_id", None]
    assert [None if pd.isna(v) else v for v in narrow.events["tf_op"].tolist()] == [None, None, "queue_id", None]
    pd.testing.assert_frame_equal(narrow.events, full[list(narrow.events.columns)])


def test_the_tables_are_built_in_small_pages_and_numpy_set_back_after(monkeypatch):
    """numpy's huge-page advice is off while a capture's tables are built (a first touch then zeroes only the pages
    written: the 1 GB capture's peak RSS 1.91 -> 1.71 GB), and as it was afterwards, after a corrupt capture too."""
    from numpy._core.multiarray import _set_madvise_hugepage

    from tpudoctor.captures.xspace import reader
    from tpudoctor.errors import InputError

    during: list[bool] = []
    build = reader.build_host_profile

    def recording(*args, **kwargs):
        state = _set_madvise_hugepage(False)
        _set_madvise_hugepage(state)
        during.append(state)
        return build(*args, **kwargs)

    monkeypatch.setattr(reader, "build_host_profile", recording)
    corrupt = XSpace()
    plane = corrupt.planes.add(id=1, name="/host:CPU")
    plane.event_metadata[1].name = "op"
    line = message_class("XLine", raw=True)(id=1, name="l", timestamp_ns=1, events=[b"\x08\x01\x22\x05\x08\x01"])
    raw = message_class("XSpace", raw=True).FromString(corrupt.SerializeToString())
    raw.planes[0].lines.append(line.SerializeToString())  # its stat says 5 bytes, 2 follow
    previous = _set_madvise_hugepage(True)
    try:
        decode_host(shared_file(TPU_CAPTURE).read_bytes(), hostname="h", source="t")
        assert during == [False]
        assert _set_madvise_hugepage(True) is True
        with pytest.raises(InputError, match="is corrupt"):
            decode_host(raw.SerializeToString(), hostname="h", source="x")
        assert during == [False, False]
        assert _set_madvise_hugepage(True) is True
    finally:
        _set_madvise_hugepage(previous)
