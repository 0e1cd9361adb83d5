"""Roofline and MFU from the capture's own cost stats, with xprof's roofline_model and hlo_stats as oracle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from paths import TESTS
from shared_data import SHARED_DATA

from tpudoctor.profile.analysis.device_peaks import (
    PEAKS_BY_GENERATION,
    device_peaks,
    peaks_for_device_kind,
    tpu_generation,
)
from tpudoctor.profile.analysis.memory_access import decode_memory_access_breakdown
from tpudoctor.profile.analysis.roofline import analyze_roofline, combine_rooflines

SHARED = SHARED_DATA  # ../shared/data, or TPUDOCTOR_SHARED_DATA
V6E = SHARED / "xprof_tpu_inference_2.xplane.pb"
FIXTURES = TESTS / "fixtures" / "profiles"
GIB = 2**30
REL = 0.01  # the bound: within 1 % of xprof per op and for the program

needs_v6e = pytest.mark.skipif(not V6E.exists(), reason=f"real TPU capture not found at {V6E} (../shared/data is absent)")


def _xprof(path: Path, tool: str):
    raw = pytest.importorskip("xprof.convert.raw_to_tool_data", reason="xprof is not installed")
    data, _ = raw.xspace_to_tool_data([str(path)], tool, {"use_saved_result": False})
    return json.loads(data)


def _rows(table: dict) -> list[dict]:
    ids = [c["id"] for c in table["cols"]]
    return [dict(zip(ids, (cell.get("v") for cell in row["c"]), strict=True)) for row in table["rows"]]


def _load(path: Path):
    import tpudoctor.profile

    capture = tpudoctor.profile.load(str(path))
    return next(iter(capture.hosts.values()))


@pytest.fixture(scope="module")
def v6e(tmp_path_factory):
    if not V6E.exists():
        pytest.skip(f"real TPU capture not found at {V6E} (../shared/data is absent)")
    # xprof writes a cache file next to its input: never beside the shared original.
    path = tmp_path_factory.mktemp("roofline") / "tpu_inference_2.xplane.pb"
    shutil.copyfile(V6E, path)
    return path, analyze_roofline(_load(path))


def _close(mine: float | None, theirs: float, what: str) -> None:
    mine = 0.0 if mine is None or not np.isfinite(mine) else float(mine)
    assert mine == pytest.approx(theirs, rel=REL, abs=1e-9), what


@pytest.mark.needs_shared_data
@needs_v6e
def test_peaks_come_from_the_device_plane(v6e):
    path, roofline = v6e
    props = next(t["p"] for t in _xprof(path, "roofline_model") if "peak_flop_rate" in t.get("p", {}))
    peaks = roofline.peaks
    assert peaks.source == "capture" and peaks.device_kind == "TPU v6 Lite"
    _close(peaks.flops_per_s / 1e9, float(props["peak_flop_rate"]), "peak GFLOP/s")
    _close(peaks.hbm_bytes_per_s / GIB, float(props["peak_hbm_bw"]), "peak HBM GiB/s")
    _close(peaks.vmem_read_bytes_per_s / GIB, float(props["peak_vmem_read_bw"]), "peak VMEM read GiB/s")
    _close(peaks.vmem_write_bytes_per_s / GIB, float(props["peak_vmem_write_bw"]), "peak VMEM write GiB/s")
    _close(peaks.ridge_point_flops_per_byte("hbm"), float(props["hbm_ridge_point"]), "HBM ridge point")


def _xprof_roofline_rows(path: Path) -> list[dict]:
    table = next(t for t in _xprof(path, "roofline_model") if "peak_flop_rate" in t.get("p", {}))
    # the whole profile ("Total"), infeed/outfeed included, as analyze_roofline's default
    return [r for r in _rows(table) if r["step"] == "Total" and r["include_infeed_outfeed"]]


@pytest.mark.needs_shared_data
@needs_v6e
def test_program_agrees_with_xprof_roofline_model(v6e):
    path, roofline = v6e
    theirs = next(r for r in _xprof_roofline_rows(path) if r["category"] == "Program")
    p = roofline.program
    assert p.n_cores == 4
    _close(p.time_ps / 1e6, theirs["total_time"], "program time us")
    _close(p.time_per_core_ps / 1e6, theirs["total_time_per_core"], "program time per core us")
    _close(p.flop_rate_flops_per_s / 1e9, theirs["measured_flop_rate"], "program GFLOP/s")
    _close(p.model_flop_rate_flops_per_s / 1e9, theirs["model_flop_rate"], "program model GFLOP/s")
    _close(p.memory_bw_bytes_per_s / GIB, theirs["measured_memory_bw"], "program memory GiB/s")
    _close(p.hbm_bw_bytes_per_s / GIB, theirs["hbm_bw"], "program HBM GiB/s")
    _close(p.operational_intensity_flops_per_byte, theirs["operational_intensity"], "program OI")
    _close(p.hbm_operational_intensity_flops_per_byte, theirs["hbm_operational_intensity"], "program HBM OI")
    _close(p.roofline_efficiency_percent / 100, theirs["roofline_efficiency"], "program roofline efficiency")
    _close(p.compute_efficiency_percent / 100, theirs["compute_efficiency"], "program FLOP rate / peak")
    _close(p.hbm_bw_utilization_percent / 100, theirs["max_mem_bw_utilization"], "program HBM utilisation")
    assert p.bound_by == theirs["bound_by"].lower() == "hbm"
    # MFU: model FLOPs over the peak; this host-offload stress test does almost no math.
    assert 0 < p.mfu_percent < 0.001


@pytest.mark.needs_shared_data
@needs_v6e
def test_every_op_agrees_with_xprof_roofline_model(v6e):
    path, roofline = v6e
    theirs = {(r["hlo_module_id"], r["operation"]): r for r in _xprof_roofline_rows(path) if r["category"] != "Program"}
    mine = {(str(r["program_id"]), r["op_name"]): r for r in roofline.ops.to_dict(orient="records")}
    assert set(mine) == set(theirs) and len(mine) == 17
    for key, t in theirs.items():
        m = mine[key]
        assert m["occurrences"] == t["occurrences"], key
        assert m["category"] == t["category"], key
        _close(m["total_time_ps"] / 1e6, t["total_time"], f"{key} total time us")
        _close(m["self_time_ps"] / 1e6, t["total_self_time"], f"{key} self time us")
        _close(m["flop_rate_flops_per_s"] / 1e9, t["measured_flop_rate"], f"{key} GFLOP/s")
        _close(m["model_flop_rate_flops_per_s"] / 1e9, t["model_flop_rate"], f"{key} model GFLOP/s")
        _close(m["memory_bw_bytes_per_s"] / GIB, t["measured_memory_bw"], f"{key} memory GiB/s")
        _close(m["hbm_bw_bytes_per_s"] / GIB, t["hbm_bw"], f"{key} HBM GiB/s")
        _close(m["vmem_read_bw_bytes_per_s"] / GIB, t["vmem_read_bw"], f"{key} VMEM read GiB/s")
        _close(m["vmem_write_bw_bytes_per_s"] / GIB, t["vmem_write_bw"], f"{key} VMEM write GiB/s")
        _close(m["operational_intensity_flops_per_byte"], t["operational_intensity"], f"{key} OI")
        _close(m["hbm_operational_intensity_flops_per_byte"], t["hbm_operational_intensity"], f"{key} HBM OI")
        _close(m["roofline_efficiency_percent"] / 100, t["roofline_efficiency"], f"{key} roofline efficiency")
        _close(m["compute_efficiency_percent"] / 100, t["compute_efficiency"], f"{key} FLOP rate / peak")
        _close(m["max_memory_bw_utilization_percent"] / 100, t["max_mem_bw_utilization"], f"{key} max mem util")
        _close(m["total_time_percent"] / 100, t["total_time_in_percentage"], f"{key} share of program time")
        assert m["bound_by"] == t["bound_by"].lower(), key


@pytest.mark.needs_shared_data
@needs_v6e
def test_every_op_agrees_with_xprof_hlo_stats(v6e):
    path, roofline = v6e
    theirs = {(r["program_id"], r["hlo_op_name"]): r for r in _rows(_xprof(path, "hlo_stats"))}
    mine = {(str(r["program_id"]), r["op_name"]): r for r in roofline.ops.to_dict(orient="records")}
    assert set(mine) == set(theirs)
    for key, t in theirs.items():
        m = mine[key]
        assert m["occurrences"] == t["occurrences"] and m["category"] == t["category"], key
        _close(m["total_time_ps"] / 1e6, t["total_time"], f"{key} total time us")
        _close(m["self_time_ps"] / 1e6, t["total_self_time"], f"{key} self time us")
        _close(m["model_flop_rate_flops_per_s"] / 1e9, t["model_flop_rate"], f"{key} model GFLOP/s")
        _close(m["flop_rate_flops_per_s"] / 1e9, t["normalized_flop_rate"], f"{key} GFLOP/s")
        _close(m["memory_bw_bytes_per_s"] / GIB, t["measured_memory_bw"], f"{key} memory GiB/s")
        _close(m["hbm_bw_bytes_per_s"] / GIB, t["hbm_bw"], f"{key} HBM GiB/s")
        _close(m["operational_intensity_flops_per_byte"], t["operational_intensity"], f"{key} OI")
        assert m["bound_by"] == t["bound_by"].lower(), key
    # the heaviest op first, as in xprof
    assert roofline.ops.iloc[0]["op_name"] == next(t for t in theirs.values() if t["rank"] == 1)["hlo_op_name"]


@pytest.mark.needs_shared_data
@needs_v6e
def test_infeed_left_out_agrees_with_xprof(v6e, tmp_path):
    """xprof's second table leaves infeed/outfeed ops out. The v6e capture has none, so one op is
    relabelled ``infeed`` in its metadata, as a capture with infeed carries the category."""
    import re

    from tpudoctor.captures.schema import message_class

    path, _ = v6e
    space = message_class("XSpace").FromString(path.read_bytes())
    for plane in space.planes:
        category = next((k for k, m in plane.stat_metadata.items() if m.name == "hlo_category"), None)
        for meta in plane.event_metadata.values():
            if category is not None and re.match(r"^%copy-done\.5 = ", meta.name):
                for stat in meta.stats:
                    if stat.metadata_id == category:
                        stat.ClearField("ref_value")
                        stat.str_value = "infeed"
    shaped = tmp_path / "infeed.xplane.pb"
    shaped.write_bytes(space.SerializeToString())
    table = next(t for t in _xprof(shaped, "roofline_model") if "peak_flop_rate" in t.get("p", {}))
    rows = [r for r in _rows(table) if r["step"] == "Total"]
    host = _load(shaped)
    for include in (True, False):
        theirs = [r for r in rows if r["include_infeed_outfeed"] is include]
        program = next(r for r in theirs if r["category"] == "Program")
        mine = analyze_roofline(host, include_infeed_outfeed=include)
        assert len(mine.ops) == len(theirs) - 1
        assert ("copy-done.5" in set(mine.ops["op_name"])) is include
        _close(mine.program.time_ps / 1e6, program["total_time"], f"program time, infeed included: {include}")
        _close(mine.program.flop_rate_flops_per_s / 1e9, program["measured_flop_rate"], "program GFLOP/s")
        _close(mine.program.hbm_bw_bytes_per_s / GIB, program["hbm_bw"], "program HBM GiB/s")
        _close(mine.program.roofline_efficiency_percent / 100, program["roofline_efficiency"], "efficiency")


@pytest.mark.needs_shared_data
@needs_v6e
def test_two_hosts_combined_agree_with_xprof(v6e, tmp_path):
    """Per-host rooflines (the map) summed by combine_rooflines agree with xprof reading both files.
    The second host is the v6e capture with every broadcast_add_fusion.1 twice as long (its
    ``duration_ps`` and ``device_duration_ps``), so the hosts differ."""
    import re

    from tpudoctor.captures.schema import message_class

    path, single = v6e
    host_a = tmp_path / "host-a.xplane.pb"
    shutil.copyfile(path, host_a)
    space = message_class("XSpace").FromString(path.read_bytes())
    for plane in space.planes:
        ops = {k for k, m in plane.event_metadata.items() if re.match(r"^%broadcast_add_fusion\.1 = ", m.name)}
        device_duration = {k for k, m in plane.stat_metadata.items() if m.name == "device_duration_ps"}
        for line in plane.lines:
            for event in line.events:
                if event.metadata_id in ops:
                    event.duration_ps *= 2
                    for stat in event.stats:
                        if stat.metadata_id in device_duration:
                            field = stat.WhichOneof("value")
                            setattr(stat, field, getattr(stat, field) * 2)
    host_b = tmp_path / "host-b.xplane.pb"
    host_b.write_bytes(space.SerializeToString())
    raw = pytest.importorskip("xprof.convert.raw_to_tool_data", reason="xprof is not installed")
    data, _ = raw.xspace_to_tool_data([str(host_a), str(host_b)], "roofline_model", {"use_saved_result": False})
    table = next(t for t in json.loads(data) if "peak_flop_rate" in t.get("p", {}))
    theirs = {r["operation"]: r for r in _rows(table) if r["step"] == "Total" and r["include_infeed_outfeed"]}
    combined = combine_rooflines([analyze_roofline(_load(host_a)), analyze_roofline(_load(host_b))])
    program = combined.program
    assert program.n_cores == 8 and program.time_ps == 2 * single.program.time_ps
    _close(program.time_ps / 1e6, theirs["Program"]["total_time"], "two-host program time")
    _close(program.flop_rate_flops_per_s / 1e9, theirs["Program"]["measured_flop_rate"], "two-host GFLOP/s")
    _close(program.hbm_bw_bytes_per_s / GIB, theirs["Program"]["hbm_bw"], "two-host HBM GiB/s")
    assert len(combined.ops) == len(theirs) - 1
    for op in combined.ops.to_dict(orient="records"):
        t = theirs[op["op_name"]]
        assert op["occurrences"] == t["occurrences"], op["op_name"]
        _close(op["total_time_ps"] / 1e6, t["total_time"], f"{op['op_name']} time")
        _close(op["flop_rate_flops_per_s"] / 1e9, t["measured_flop_rate"], f"{op['op_name']} GFLOP/s")
        _close(op["hbm_bw_bytes_per_s"] / GIB, t["hbm_bw"], f"{op['op_name']} HBM GiB/s")
        _close(op["roofline_efficiency_percent"] / 100, t["roofline_efficiency"], f"{op['op_name']} efficiency")
    slowed = combined.ops.set_index("op_name").loc["broadcast_add_fusion.1"]
    assert slowed["roofline_efficiency_percent"] < single.ops.set_index("op_name").loc[
        "broadcast_add_fusion.1", "roofline_efficiency_percent"]


def test_breakdown_decodes_reads_and_writes_per_memory_space():
    # Two entries of the real schema: READ 5 GiB from HBM, WRITE 5 GiB to HBM (bytes of the v6e
    # capture's broadcast_add_fusion), then a VMEM read and a CMEM write built the same way.
    hbm = b"\n\n\x08\x01\x10\x01\x18\x80\x80\x80\x80\x14\n\n\x08\x02\x10\x01\x18\x80\x80\x80\x80\x14"
    vmem_read = b"\n\x07\x08\x01\x10\x03\x18\x80\x08"  # 1024 bytes
    cmem_write = b"\n\x06\x08\x02\x10\x02\x18\x40"  # 64 bytes
    out = decode_memory_access_breakdown(hbm + vmem_read + cmem_write)
    assert out == {"hbm_bytes": 2 * 5 * 2**30, "cmem_read_bytes": 0, "cmem_write_bytes": 64,
                   "vmem_read_bytes": 1024, "vmem_write_bytes": 0}
    assert decode_memory_access_breakdown(b"") == decode_memory_access_breakdown(None)
    assert decode_memory_access_breakdown(b"\n\x7f\x08") == decode_memory_access_breakdown(b"")  # truncated


@pytest.mark.needs_shared_data
@needs_v6e
def test_roofline_as_plain_data_names_every_op(v6e):
    _, roofline = v6e
    doc = roofline.to_dict()
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc
    assert doc["ops_total"] == len(doc["ops"]) == 17
    assert doc["ops"][0]["op_name"] == "copy-done.4" and doc["ops"][0]["program_id"] == "12190760917235803885"
    assert doc["program"]["bound_by"] == "hbm" and doc["peaks"]["source"] == "capture"
    assert len(roofline.to_dict(max_ops=3)["ops"]) == 3


@pytest.mark.parametrize(("kind", "generation"), [
    ("TPU v4", "v4"), ("TPU v5 lite", "v5e"), ("TPU v5e", "v5e"), ("TPU v5", "v5p"), ("TPU v5p", "v5p"),
    ("TPU v6 Lite", "v6e"), ("TPU v6e", "v6e"), ("TPU7x", "tpu7x"), ("NVIDIA H100", None), ("", None),
])
def test_generation_table_is_used_by_device_kind(kind, generation):
    assert tpu_generation(kind) == generation
    peaks = peaks_for_device_kind(kind)
    if generation is None:
        assert peaks is None
    else:
        assert (peaks.flops_per_s, peaks.hbm_bytes_per_s) == PEAKS_BY_GENERATION[generation]
        assert peaks.source == f"table:{generation}"


@pytest.mark.needs_shared_data
@needs_v6e
def test_table_stands_in_only_without_plane_peaks(v6e):
    path, _ = v6e
    host = _load(path)
    assert device_peaks(host).source == "capture"
    for stats in host.plane_stats.values():  # a capture from a runtime that writes no roofs
        stats.pop("peak_teraflops_per_second", None)
        stats.pop("peak_hbm_bw_gigabytes_per_second", None)
    peaks = device_peaks(host)
    assert peaks.source == "table:v6e" and peaks.flops_per_s == 918e12
    assert analyze_roofline(host).peaks is peaks or analyze_roofline(host).peaks == peaks


@pytest.mark.parametrize("fixture", ["jax_compute_bound", "tf_compute_bound"])
def test_no_roofline_without_tpu_ops(fixture):
    assert analyze_roofline(_load(FIXTURES / fixture / "localhost.xplane.pb")) is None
