"""The memory-event reader, timelines and peak buffers (tpudoctor.memory), with xprof's memory_profile
(installed by the test extra) as the oracle on every real capture that has memory events, and on a
TensorFlow CPU capture made here.

Which captures have memory events: all five in ../shared/data (the TPU v6e capture: 4 TPU
allocators "0".."3", 906 events; the TF GPU multi-worker capture: GPU_1/4/6_bfc and gpu_host_bfc,
2,493 events; the three JAX ROCm captures: GPU_n_bfc, 59, 230 and 460 events). A TensorFlow CPU
capture has them when TF's CPU allocator is a BFC allocator: ``TF_CPU_ALLOCATOR_USE_BFC=true`` (allocator
"bfc_cpu_allocator_for_gpu"), or oneDNN on (TF's MklCPUAllocator serves large buffers from a BFC allocator
named "mklcpu"; TF turns oneDNN on by itself on a CPU with AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX, and
``TF_ENABLE_ONEDNN_OPTS`` overrides that). With neither, and in a JAX CPU trace, there are none (the PJRT CPU
client's allocator writes no MemoryAllocation TraceMe).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from profile_oracle import real_captures

from tpudoctor.captures.memory_events import (
    DATA_TYPE_NAMES,
    memory_events_from_bytes,
    read_memory_events,
)
from tpudoctor.captures.schema import message_class
from tpudoctor.captures.xspace import decoder, reader
from tpudoctor.errors import InputError
from tpudoctor.memory.buffers import peak_breakdown, xprof_active_allocations
from tpudoctor.memory.timeline import allocator_timelines

FRAGMENTATION_TOLERANCE = 1e-5  # xprof's JSON writes floats with 6 significant digits


# --- xprof, the oracle ----------------------------------------------------------------------------------------------

def _xprof_memory_profile(path: Path, tmp_path: Path) -> dict:
    raw = pytest.importorskip("xprof.convert.raw_to_tool_data", reason="xprof is not installed (test extra)")
    copy = tmp_path / path.name  # xprof writes a cache next to its input: never beside the shared original
    if not copy.exists():
        shutil.copyfile(path, copy)
    data, _ = raw.xspace_to_tool_data([str(copy)], "memory_profile", {"use_saved_result": False})
    return json.loads(data)


def _no_invalid(dtype: str) -> str:
    """xprof names DT_INVALID (no type recorded) "INVALID"; tpudoctor reads it as no dtype, ""."""
    return "" if dtype == "INVALID" else dtype


def _xprof_points(snapshots: list[dict]) -> list[tuple]:
    return [(int(s["timeOffsetPs"]), int(s["aggregationStats"]["heapAllocatedBytes"]),
             int(s["aggregationStats"]["stackReservedBytes"]), int(s["aggregationStats"]["freeMemoryBytes"]),
             s["activityMetadata"]["memoryActivity"] == "ALLOCATION", int(s["activityMetadata"]["address"]),
             s["activityMetadata"]["tfOpName"], s["activityMetadata"]["tensorShape"],
             _no_invalid(s["activityMetadata"]["dataType"]), s["activityMetadata"]["regionType"],
             int(s["activityMetadata"]["stepId"])) for s in snapshots]


def _our_points(frame) -> list[tuple]:
    return list(zip(frame["offset_ps"].tolist(), frame["heap_bytes"].tolist(), frame["stack_bytes"].tolist(),
                    frame["free_bytes"].tolist(), frame["is_allocation"].tolist(), frame["addr"].tolist(),
                    frame["tf_op"].astype(str).tolist(), frame["shape"].astype(str).tolist(),
                    frame["dtype"].astype(str).tolist(), frame["region_type"].astype(str).tolist(),
                    frame["step"].tolist(), strict=True))


def _xprof_active(profile: dict) -> list[tuple]:
    rows = []
    for active in profile["activeAllocations"]:
        special = int(active["specialIndex"])
        meta = (profile["specialAllocations"][special] if special >= 0
                else profile["memoryProfileSnapshots"][int(active["snapshotIndex"])]["activityMetadata"])
        rows.append((int(meta["allocationBytes"]), int(meta["requestedBytes"]), meta["tfOpName"], meta["regionType"],
                     _no_invalid(meta["dataType"]), meta["tensorShape"], int(active["numOccurrences"])))
    return rows


def _assert_equals_xprof(path: Path, tmp_path: Path, grouped: bool = True) -> dict:
    """Allocator ids, each peak (bytes, time, heap/stack/free, capacity, lifetime peak, fragmentation),
    every timeline point and the active-allocation table equal xprof's; returns the counts compared.

    ``grouped=False``: a capture whose steps xprof finds itself (its event grouping writes the
    group_id the reader takes steps from; a TF capture made here has none of its own), so steps,
    and the active allocations (one step's), are not compared."""
    xprof = _xprof_memory_profile(path, tmp_path)
    events = read_memory_events(path)
    timelines = allocator_timelines(events, order="xprof")
    assert list(timelines) == events.allocators == xprof["memoryIds"]
    counts = {}
    for allocator, timeline in timelines.items():
        theirs = xprof["memoryProfilePerAllocator"][allocator]
        summary, stats = theirs["profileSummary"], theirs["profileSummary"]["peakStats"]
        peak = timeline.peak
        assert (peak.bytes_in_use, peak.heap_bytes, peak.stack_bytes, peak.free_bytes, peak.offset_ps,
                peak.capacity_bytes, peak.lifetime_peak_bytes) == (
            int(stats["peakBytesInUse"]), int(stats["heapAllocatedBytes"]), int(stats["stackReservedBytes"]),
            int(stats["freeMemoryBytes"]), int(summary["peakStatsTimePs"]), int(summary["memoryCapacity"]),
            int(summary["peakBytesUsageLifetime"])), allocator
        assert peak.fragmentation == pytest.approx(stats["fragmentation"], abs=FRAGMENTATION_TOLERANCE)
        sampled = timeline.sampled()
        if not grouped:
            assert [p[:-1] for p in _our_points(sampled)] == [
                p[:-1] for p in _xprof_points(theirs["sampledTimelineSnapshots"])], allocator
            counts[allocator] = (len(timeline), len(sampled), peak.bytes_in_use)
            continue
        assert _our_points(sampled) == _xprof_points(theirs["sampledTimelineSnapshots"]), allocator
        ours = xprof_active_allocations(timeline)
        assert [tuple(row) for row in ours[["allocation_bytes", "requested_bytes", "tf_op", "region_type", "dtype",
                                            "shape", "occurrences"]].itertuples(index=False)] == _xprof_active(theirs)
        counts[allocator] = (len(timeline), len(sampled), peak.bytes_in_use)
    # in time order the points are the same ones (xprof's order differs only where host lines start apart)
    for allocator, timeline in allocator_timelines(events).items():
        cut = None if grouped else -1
        assert sorted(p[:cut] for p in _our_points(timeline.sampled())) == sorted(
            p[:cut] for p in _xprof_points(xprof["memoryProfilePerAllocator"][allocator]["sampledTimelineSnapshots"]))
    return counts


# --- an independent, slow reader: the protobuf message classes, one event at a time -----------------------------

def _oracle_memory_events(data: bytes) -> list[dict]:
    space = message_class("XSpace").FromString(data)
    rows = []
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        names = {key: value.name for key, value in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                kind = plane.event_metadata[event.metadata_id].name
                if kind not in ("MemoryAllocation", "MemoryDeallocation"):
                    continue
                values, allocator = {}, ""
                for stat in event.stats:
                    name = names.get(stat.metadata_id)
                    which = stat.WhichOneof("value")
                    value = names.get(stat.ref_value) if which == "ref_value" else getattr(stat, which)
                    if name in ("index_on_host", "device_ordinal", "allocator_name"):
                        allocator = str(value)
                    values[name] = value
                rows.append({"allocator": allocator, "is_allocation": kind == "MemoryAllocation",
                             "offset_ps": event.offset_ps, "heap_bytes": values.get("bytes_allocated", 0),
                             "addr": values.get("addr", 0), "tf_op": values.get("tf_op", ""),
                             "shape": values.get("shape", ""), "fragmentation": float(values.get("fragmentation", 0)),
                             "dtype": DATA_TYPE_NAMES[values.get("data_type", 0)],
                             "allocation_bytes": values.get("allocation_bytes", 0)})
        break
    return rows


def _assert_equals_oracle(data: bytes, events) -> None:
    expected = _oracle_memory_events(data)
    frame = events.frame
    assert len(frame) == len(expected)
    for column in expected[0] if expected else ():
        ours = frame[column].astype(str if column in ("allocator", "tf_op", "shape", "dtype") else object).tolist()
        assert ours == [row[column] for row in expected], column


def _assert_heap_moves_by_each_size(events) -> None:
    """Each event moves the allocator's heap by its buffer's size (a free's: its matched allocation's)."""
    for timeline in allocator_timelines(events).values():
        frame = timeline.frame
        step = np.diff(frame["heap_bytes"].to_numpy())
        sign = np.where(frame["is_allocation"].to_numpy()[1:], 1, -1)
        assert (step == sign * frame["size_bytes"].to_numpy()[1:]).all(), timeline.allocator


# --- the real captures in ../shared/data ----------------------------------------------------------------------------

CAPTURES = real_captures()
EXPECTED = {  # capture: {allocator: (events, timeline points, peak bytes)}, read once from xprof 2.24
    "xprof_tpu_inference_2.xplane.pb": {"0": (234, 234, 21492569216), "1": (224, 224, 21492671104),
                                        "2": (224, 224, 21492671104), "3": (224, 224, 21492569216)},
    "xprof_gpu_multi_worker_34.83.195.179_6003.xplane.pb": {
        "GPU_1_bfc": (19, 19, 4013344768), "GPU_4_bfc": (969, 969, 6208853760),
        "GPU_6_bfc": (969, 969, 6210111488), "gpu_host_bfc": (536, 536, 605952)},
}


@pytest.mark.needs_shared_data
@pytest.mark.parametrize("capture", CAPTURES or [None], ids=lambda p: p.name if p else "absent")
def test_every_real_capture_equals_xprof_memory_profile(capture, tmp_path):
    if capture is None:
        pytest.skip("no real capture: ../shared/data is absent (or set TPUDOCTOR_SHARED_DATA)")
    counts = _assert_equals_xprof(capture, tmp_path)
    assert counts, f"{capture.name} has memory events"
    if capture.name in EXPECTED:
        assert counts == EXPECTED[capture.name]
    data = capture.read_bytes()
    events = memory_events_from_bytes(data, source=capture.name)
    _assert_equals_oracle(data, events)
    _assert_heap_moves_by_each_size(events)


@pytest.mark.needs_shared_data
def test_tpu_frees_carry_no_size_and_take_their_allocations(shared_data):
    events = read_memory_events(shared_data / "xprof_tpu_inference_2.xplane.pb")
    frame = events.frame
    assert (frame.loc[~frame["is_allocation"], "allocation_bytes"] == 0).all()
    for timeline in allocator_timelines(events).values():
        frees = timeline.frame[~timeline.frame["is_allocation"]]
        assert (frees["size_bytes"] > 0).all() and timeline.unmatched_frees == 0 and timeline.reallocated == 0
        breakdown = peak_breakdown(timeline)
        # the runtime's 21.49 GB reservation is the stack; every heap byte at the peak is a seen buffer
        assert breakdown.stack_bytes == 21491712000
        assert breakdown.unattributed_heap_bytes == 0 and breakdown.live_bytes == timeline.peak.heap_bytes
        assert breakdown.top["total_bytes"].sum() == breakdown.live_bytes


@pytest.mark.needs_shared_data
def test_tf_gpu_peak_buffers_name_their_ops_shapes_and_dtypes(shared_data):
    events = read_memory_events(shared_data / "xprof_gpu_multi_worker_34.83.195.179_6003.xplane.pb")
    timeline = allocator_timelines(events)["GPU_4_bfc"]
    breakdown = peak_breakdown(timeline)
    top = breakdown.top.iloc[0]
    assert top["size_bytes"] > 0 and top["tf_op"] and top["shape"].startswith("[") and top["dtype"] in ("half", "float")
    assert breakdown.live_bytes + breakdown.unattributed_heap_bytes == timeline.peak.heap_bytes
    assert breakdown.live["size_bytes"].is_monotonic_decreasing


@pytest.mark.needs_shared_data
def test_a_large_file_read_plane_by_plane_equals_the_whole_file_read(shared_data, monkeypatch):
    path = shared_data / "xprof_gpu_multi_worker_34.83.195.179_6003.xplane.pb"
    whole = read_memory_events(path)
    monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 1)
    streamed = read_memory_events(path)
    assert streamed.frame.equals(whole.frame) and streamed.time_origin_ns == whole.time_origin_ns


# --- real captures made here -----------------------------------------------------------------------------------------

TF_CAPTURE = """
import sys
import tensorflow as tf
from tensorflow.python.util import _pywrap_util_port

print("onednn", _pywrap_util_port.IsMklEnabled())  # which CPU allocator this process uses

@tf.function
def step(x, w):
    return tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)) * 2.0)

x, w = tf.random.normal([256, 512]), tf.random.normal([512, 1024])
step(x, w)
tf.profiler.experimental.start(sys.argv[1], options=tf.profiler.experimental.ProfilerOptions(host_tracer_level=3))
for i in range(3):
    with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
        step(x, w)
        big = tf.zeros([1024, 1024]) + 1.0
        del big
tf.profiler.experimental.stop()
"""

JAX_CAPTURE = """
import sys
import jax
import jax.numpy as jnp

f = jax.jit(lambda x, w: jnp.sum(jax.nn.relu(x @ w)))
x, w = jnp.ones((256, 512)), jnp.ones((512, 1024))
f(x, w).block_until_ready()
options = jax.profiler.ProfileOptions()
options.host_tracer_level = 3
with jax.profiler.trace(sys.argv[1], profiler_options=options):
    for i in range(3):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            f(x, w).block_until_ready()
            (jnp.zeros((1024, 1024)) + 1.0).block_until_ready()
"""


def _run_capture(script: str, out: Path, **env: str) -> tuple[Path, str]:
    """The capture's path and what the process printed."""
    done = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu", **env})
    assert done.returncode == 0, done.stderr[-3000:]
    found = sorted(out.glob("**/*.xplane.pb"))
    assert len(found) == 1, found
    return found[0], done.stdout


def _capture(script: str, out: Path, **env: str) -> Path:
    return _run_capture(script, out, **env)[0]


@pytest.mark.slow
def test_tensorflow_cpu_capture_with_a_bfc_allocator_equals_xprof(tmp_path):
    pytest.importorskip("tensorflow", reason="TensorFlow is not installed (test extra)")
    path = _capture(TF_CAPTURE, tmp_path / "tf", TF_CPU_ALLOCATOR_USE_BFC="true")
    counts = _assert_equals_xprof(path, tmp_path, grouped=False)
    assert list(counts) == ["bfc_cpu_allocator_for_gpu"]
    n_events, _, peak = counts["bfc_cpu_allocator_for_gpu"]
    assert n_events >= 6 and peak >= 4 << 20  # at least the 4 MiB tf.zeros + 1.0 result
    events = read_memory_events(path)
    _assert_equals_oracle(path.read_bytes(), events)
    _assert_heap_moves_by_each_size(events)
    timeline = allocator_timelines(events)["bfc_cpu_allocator_for_gpu"]
    assert peak_breakdown(timeline).top["size_bytes"].max() >= 4 << 20


@pytest.mark.slow
def test_tensorflow_cpu_capture_with_onednn_records_its_mklcpu_allocator_and_equals_xprof(tmp_path):
    """TF_CPU_ALLOCATOR_USE_BFC=false does not make a TF CPU capture allocator-free: with oneDNN on (TF's
    default on a CPU with AVX512_VNNI/BF16, AVX_VNNI or AMX, so on the CI machines) the MklCPUAllocator's BFC
    allocator "mklcpu" records every buffer over its small-allocation threshold. TF 2.21 on such a CPU: 18
    events, per step a 4 MiB Fill, the AddV2 result (4 MiB asked, a 6 MiB chunk) and the 1 MiB MatMul output,
    each allocated and freed; peak 12.5 MiB heap."""
    pytest.importorskip("tensorflow", reason="TensorFlow is not installed (test extra)")
    path, printed = _run_capture(TF_CAPTURE, tmp_path / "tf", TF_CPU_ALLOCATOR_USE_BFC="false",
                                 TF_ENABLE_ONEDNN_OPTS="1")
    if "onednn True" not in printed:
        pytest.skip(f"this TensorFlow build has no oneDNN ({printed.strip()!r}): no mklcpu allocator")
    counts = _assert_equals_xprof(path, tmp_path, grouped=False)
    assert list(counts) == ["mklcpu"]
    events = read_memory_events(path)
    _assert_equals_oracle(path.read_bytes(), events)
    _assert_heap_moves_by_each_size(events)
    frame = events.frame
    allocated = frame[frame["is_allocation"]]
    assert len(frame) == 2 * len(allocated)  # every buffer freed within the capture
    per_op = allocated.groupby("tf_op", observed=True)["requested_bytes"].agg(["count", "max"])
    assert per_op.loc["Fill"].tolist() == [3, 4 << 20]  # tf.zeros([1024, 1024]), once a step
    assert per_op.loc["AddV2"].tolist() == [3, 4 << 20]  # its + 1.0
    assert per_op.loc["MatMul"].tolist() == [3, 256 * 1024 * 4]  # the step's matmul output
    timeline = allocator_timelines(events)["mklcpu"]
    breakdown = peak_breakdown(timeline)
    assert timeline.peak.heap_bytes >= 8 << 20  # the Fill and the AddV2 result live at once
    assert breakdown.live_bytes + breakdown.unattributed_heap_bytes == timeline.peak.heap_bytes
    assert sorted(breakdown.top["tf_op"].astype(str)) == ["AddV2", "Fill"]


@pytest.mark.slow
def test_tensorflow_cpu_capture_without_bfc_and_without_onednn_has_no_memory_events(tmp_path):
    pytest.importorskip("tensorflow", reason="TensorFlow is not installed (test extra)")
    path, printed = _run_capture(TF_CAPTURE, tmp_path / "tf", TF_CPU_ALLOCATOR_USE_BFC="false",
                                 TF_ENABLE_ONEDNN_OPTS="0")
    assert "onednn False" in printed
    events = read_memory_events(path)
    assert len(events) == 0 and events.allocators == [] and allocator_timelines(events) == {}


@pytest.mark.slow
def test_jax_cpu_trace_carries_no_memory_events(tmp_path):
    pytest.importorskip("jax", reason="JAX is not installed (test extra)")
    path = _capture(JAX_CAPTURE, tmp_path / "jax")
    events = read_memory_events(path)
    assert events.has_host_plane and len(events) == 0 and allocator_timelines(events) == {}


# --- synthetic captures: each rule on its own ------------------------------------------------------------------------

STAT_NAMES = ("bytes_allocated", "bytes_reserved", "bytes_available", "peak_bytes_in_use", "requested_bytes",
              "allocation_bytes", "addr", "tf_op", "shape", "data_type", "region_type", "group_id",
              "index_on_host", "device_ordinal", "allocator_name", "fragmentation", "dummy", "GPU_9_bfc", "conv/1")
STAT_ID = {name: index + 1 for index, name in enumerate(STAT_NAMES)}


def _space(events_per_line: list[list[tuple]], *, line_ts: list[int] | None = None, other_events: int = 2,
           plane_name: str = "/host:CPU") -> bytes:
    """An XSpace with a device plane and a host plane; each event (kind, offset_ps, {stat: value})."""
    space = message_class("XSpace")()
    device = space.planes.add(id=1, name="/device:TPU:0")
    device.event_metadata[1].name = "MemoryAllocation"  # on a device plane: never read
    device_line = device.lines.add(id=1, name="XLA Ops", timestamp_ns=10)
    device_line.events.add(metadata_id=1, offset_ps=0, duration_ps=5)
    plane = space.planes.add(id=0, name=plane_name)
    for name, key in STAT_ID.items():
        plane.stat_metadata[key].id = key
        plane.stat_metadata[key].name = name
    for key, name in ((1, "MemoryAllocation"), (2, "MemoryDeallocation"), (3, "SomethingElse")):
        plane.event_metadata[key].id = key
        plane.event_metadata[key].name = name
    for index, events in enumerate(events_per_line):
        line = plane.lines.add(id=100 + index, name=f"thread/{index}",
                               timestamp_ns=(line_ts or [1000] * len(events_per_line))[index])
        for _ in range(other_events):
            line.events.add(metadata_id=3, offset_ps=1, duration_ps=1)
        for kind, offset, stats in events:
            event = line.events.add(metadata_id=1 if kind == "A" else 2, offset_ps=offset)
            for name, value in stats.items():
                stat = event.stats.add(metadata_id=STAT_ID[name])
                if isinstance(value, tuple):  # ("ref", name) / ("uint", n)
                    if value[0] == "ref":
                        stat.ref_value = STAT_ID[value[1]]
                    else:
                        stat.uint64_value = value[1]
                elif isinstance(value, float):
                    stat.double_value = value
                elif isinstance(value, str):
                    stat.str_value = value
                else:
                    stat.int64_value = value
    return space.SerializeToString()


def _alloc(heap, size, addr, **more):
    return {"bytes_allocated": heap, "bytes_reserved": 0, "bytes_available": 1000 - heap, "peak_bytes_in_use": heap,
            "requested_bytes": size, "allocation_bytes": size, "addr": addr, "index_on_host": 0, **more}


def _free(heap, addr, **more):
    return {"bytes_allocated": heap, "bytes_reserved": 0, "bytes_available": 1000 - heap, "peak_bytes_in_use": 0,
            "addr": addr, "index_on_host": 0, **more}


def _read(data: bytes):
    return memory_events_from_bytes(data, source="synthetic.xplane.pb")


def test_frees_take_their_allocations_size_and_metadata_by_address():
    data = _space([[("A", 10, _alloc(100, 100, 1, tf_op=("ref", "conv/1"), shape="f32[5]", data_type=1)),
                    ("A", 20, _alloc(300, 200, 2)),
                    ("F", 30, _free(200, 1)),
                    ("F", 40, _free(0, 2))]])
    timeline = allocator_timelines(_read(data))["0"]
    frame = timeline.frame
    assert frame["size_bytes"].tolist() == [100, 200, 100, 200]
    assert frame["tf_op"].astype(str).tolist() == ["conv/1", "", "conv/1", ""]
    assert frame["shape"].astype(str).tolist() == ["f32[5]", "", "f32[5]", ""]
    assert frame["dtype"].astype(str).tolist() == ["float", "", "float", ""]  # no data_type: no dtype, not "INVALID"
    assert frame["matched_row"].tolist() == [2, 3, 0, 1]
    assert (timeline.peak.bytes_in_use, timeline.peak.time_ps, timeline.peak.position) == (300, 20, 1)
    breakdown = peak_breakdown(timeline)
    assert breakdown.live["size_bytes"].tolist() == [200, 100] and breakdown.unattributed_heap_bytes == 0


def test_a_free_before_any_allocation_and_an_allocation_over_a_live_one_are_counted():
    data = _space([[("F", 5, _free(0, 9)), ("A", 10, _alloc(100, 100, 1)), ("A", 20, _alloc(200, 100, 1)),
                    ("F", 30, _free(100, 1))]])
    timeline = allocator_timelines(_read(data))["0"]
    assert (timeline.unmatched_frees, timeline.reallocated) == (1, 1)
    # the first allocation at 1 ends where the second is made over it; the free matches the second
    assert timeline.frame["matched_row"].tolist() == [-1, 2, 3, 2]
    assert peak_breakdown(timeline).live["row"].tolist() == [2]


def test_the_allocator_is_the_last_of_its_id_stats_and_numbers_read_as_text():
    data = _space([[("A", 10, {**_alloc(10, 10, 1), "device_ordinal": 3}),
                    ("A", 11, {**_alloc(10, 10, 2), "allocator_name": ("ref", "GPU_9_bfc")}),
                    ("A", 12, {**_alloc(10, 10, 3), "allocator_name": "GPU_9_bfc"}),
                    ("A", 13, {**_alloc(10, 10, 4), "index_on_host": ("uint", 7)})]])
    events = _read(data)
    assert events.frame["allocator"].astype(str).tolist() == ["3", "GPU_9_bfc", "GPU_9_bfc", "7"]
    assert events.allocators == ["3", "7", "GPU_9_bfc"]  # sorted as strings, as xprof lists them


def test_fragmentation_is_read_from_an_int_or_a_double_and_uint64_sizes_are_read():
    data = _space([[("A", 10, {**_alloc(10, 10, 1), "fragmentation": 0}),
                    ("A", 20, {**_alloc(20, 10, 2), "fragmentation": 0.25, "bytes_allocated": ("uint", 20)})]])
    frame = _read(data).frame
    assert frame["fragmentation"].tolist() == [0.0, 0.25]
    assert frame["heap_bytes"].tolist() == [10, 20]


def test_time_is_from_the_earliest_host_line_and_offset_is_from_the_events_own_line():
    data = _space([[("A", 50, _alloc(10, 10, 1))], [("A", 40, _alloc(20, 10, 2))]], line_ts=[2000, 1000])
    events = _read(data)
    assert events.time_origin_ns == 1000
    assert events.frame["time_ps"].tolist() == [1_000_050, 40] and events.frame["offset_ps"].tolist() == [50, 40]
    assert allocator_timelines(events)["0"].frame["addr"].tolist() == [2, 1]  # true time order
    assert allocator_timelines(events, order="xprof")["0"].frame["addr"].tolist() == [2, 1]  # 40 < 50 either way
    events.rebase(0)
    assert events.frame["time_ps"].tolist() == [2_000_050, 1_000_040]


def test_the_peak_is_the_last_event_in_file_order_at_the_largest_bytes_in_use():
    data = _space([[("A", 30, _alloc(100, 100, 1)), ("A", 10, _alloc(100, 100, 2))]])
    timeline = allocator_timelines(_read(data))["0"]
    # time order puts the second event first; xprof keeps the later one in the file
    assert timeline.frame["addr"].tolist() == [2, 1] and timeline.peak.time_ps == 10


def test_steps_without_a_group_id_take_the_previous_step_plus_one():
    data = _space([[("A", 1, _alloc(1, 1, 1)), ("A", 2, _alloc(2, 1, 2, group_id=4)), ("A", 3, _alloc(3, 1, 3)),
                    ("A", 4, _alloc(4, 1, 4))]])
    assert allocator_timelines(_read(data))["0"].frame["step"].tolist() == [0, 4, 5, 5]


def test_sampling_keeps_the_largest_of_each_box_as_xprof_does():
    rng = np.random.default_rng(0)
    heaps = rng.integers(0, 1000, size=2357).tolist()
    data = _space([[("A", i, _alloc(h, 1, i)) for i, h in enumerate(heaps)]], other_events=0)
    timeline = allocator_timelines(_read(data))["0"]
    sampled = timeline.sampled(1000)
    width = len(heaps) // 1000
    count1 = 1000 * (width + 1) - len(heaps)
    expected, start = [], 0
    for box, size in enumerate([width] * count1 + [width + 1] * (1000 - count1)):
        chunk = heaps[start:start + size]
        expected.append(start + chunk.index(max(chunk)))
        start += size
        del box
    assert sampled["addr"].tolist() == expected
    assert len(timeline.sampled(5000)) == len(heaps)


def test_memory_events_on_other_planes_and_other_event_names_are_not_read():
    data = _space([[("A", 10, _alloc(10, 10, 1))]], plane_name="/host:GPU")
    events = _read(data)
    assert not events.has_host_plane and len(events) == 0 and events.allocators == []


def test_a_host_plane_without_memory_events_reads_as_none():
    events = _read(_space([[]], other_events=3))
    assert events.has_host_plane and len(events) == 0 and allocator_timelines(events) == {}


def test_a_corrupt_or_foreign_file_is_an_input_error(tmp_path):
    data = _space([[("A", 10, _alloc(10, 10, 1))]])
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated|corrupt"):
        read_memory_events(path)
    with pytest.raises(InputError, match="text document"):
        memory_events_from_bytes(b'{"traceEvents": []}', source="trace.json")


@pytest.mark.needs_shared_data
def test_small_batches_read_the_same_events(shared_data, monkeypatch):
    """Events decoded over many small batches: the same table."""
    path = shared_data / "xprof_gpu_multi_worker_34.83.195.179_6003.xplane.pb"
    whole = read_memory_events(path).frame
    monkeypatch.setattr(decoder, "BATCH_EVENTS", 997)
    assert read_memory_events(path).frame.equals(whole)
