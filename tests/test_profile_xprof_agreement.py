"""Cross-checks on the real TPU v6e capture, with xprof itself (installed) as the oracle.

The capture has no Steps line; a TPU-shaped variant gets one built from its own XLA Modules runs
(real schema: a ``Steps`` line per TensorCore plane with ``group_id``/``step_num`` stats), because no
real TPU capture with a Steps line small enough is available.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
V6E = SHARED / "xprof_tpu_inference_2.xplane.pb"

pytestmark = [
    pytest.mark.needs_shared_data,
    pytest.mark.skipif(not V6E.exists(), reason=f"real TPU capture not found at {V6E} (../shared/data is absent)"),
]


def _xprof(path: Path, tool: str) -> list:
    raw = pytest.importorskip("xprof.convert.raw_to_tool_data", reason="xprof is not installed")
    data, _ = raw.xspace_to_tool_data([str(path)], tool, {"use_saved_result": False})
    return json.loads(data)


def _props(tables: list, key: str) -> dict:
    return next(t["p"] for t in tables if key in t.get("p", {}))


def _analyze(path: Path) -> dict:
    import tpudoctor.profile
    from tpudoctor.profile.analysis import analyze

    return analyze(tpudoctor.profile.load(str(path))).to_dict()


def _with_steps_line(src: Path, dst: Path, margin_ps: int = 1_000_000_000) -> None:
    """Add a device ``Steps`` line: one step per run of the dominant program, starting just before it."""
    from tpudoctor.profile.schema import message_class

    space = message_class("XSpace").FromString(src.read_bytes())
    for plane in space.planes:
        if not plane.name.startswith("/device:TPU:"):
            continue
        modules = next(line for line in plane.lines if line.name == "XLA Modules")
        stat_ids = {m.name: k for k, m in plane.stat_metadata.items()}

        def stat_id(name: str, plane=plane, stat_ids=stat_ids) -> int:
            if name not in stat_ids:
                k = max([*plane.stat_metadata.keys(), 0]) + 1
                plane.stat_metadata[k].id, plane.stat_metadata[k].name = k, name
                stat_ids[name] = k
            return stat_ids[name]

        program = next(k for k, m in plane.event_metadata.items() if m.name.startswith("jit_f("))
        runs = sorted((e.offset_ps, e.offset_ps + e.duration_ps) for e in modules.events if e.metadata_id == program)
        line = plane.lines.add(id=100, name="Steps", timestamp_ns=modules.timestamp_ns)
        for i, (start, end) in enumerate(runs):
            k = max(plane.event_metadata.keys()) + 1
            plane.event_metadata[k].id, plane.event_metadata[k].name = k, str(i)
            next_start = runs[i + 1][0] - margin_ps if i + 1 < len(runs) else end
            event = line.events.add(metadata_id=k, offset_ps=start - margin_ps, duration_ps=next_start - (start - margin_ps))
            event.stats.add(metadata_id=stat_id("group_id"), int64_value=i)
            event.stats.add(metadata_id=stat_id("step_num"), int64_value=i)
    dst.write_bytes(space.SerializeToString())


@pytest.fixture(scope="module")
def v6e_copy(tmp_path_factory) -> Path:
    # xprof writes a cache file next to its input: never beside the shared original.
    path = tmp_path_factory.mktemp("v6e") / "tpu_inference_2.xplane.pb"
    shutil.copyfile(V6E, path)
    return path


def test_v6e_findings(v6e_copy):
    doc = _analyze(v6e_copy)
    assert doc["device"] == "tpu"
    assert doc["steps"]["method"] == "pseudo-steps-xla-modules"  # no Steps line in this capture
    assert doc["steps"]["program"].startswith("jit_f(") and doc["steps"]["count"] == 100
    rc = doc["recompilation"]
    assert rc["compile_count"] == 4
    assert {f["function"] for f in rc["functions"]} == {"f", "_psum", "convert_element_type", "broadcast_in_dim"}
    assert 1000 < rc["compile_ms"] < 2500  # backend_compile total 1.53 s
    offload = next(f for f in doc["findings"] if f["id"] == "host-offload")
    assert offload["evidence"]["share_of_device_percent"] > 90  # copy-done to S(5) dominates device time
    assert doc["verdict"] == "host-bound"


def test_v6e_duty_cycle_agrees_with_xprof_overview(v6e_copy):
    overview = _props(_xprof(v6e_copy, "overview_page"), "device_duty_cycle_percent")
    doc = _analyze(v6e_copy)
    xprof_duty = float(overview["device_duty_cycle_percent"].rstrip("%"))
    xprof_idle = float(overview["device_idle_time_percent"].rstrip("%"))
    assert doc["device_ops"]["duty_cycle_percent"] == pytest.approx(xprof_duty, abs=1.0)
    assert doc["device_ops"]["idle_percent"] == pytest.approx(xprof_idle, abs=1.0)


def test_steps_line_capture_agrees_with_xprof_input_pipeline(v6e_copy, tmp_path):
    shaped = tmp_path / "tpu_steps.xplane.pb"
    _with_steps_line(v6e_copy, shaped)
    ipa = _props(_xprof(shaped, "input_pipeline_analyzer"), "steptime_ms_average")
    doc = _analyze(shaped)
    assert doc["steps"]["method"] == "device-steps-line"
    stats = doc["steps"]["stats"]
    assert stats["count"] == 100
    for mine, theirs in ((stats["mean_ms"], "steptime_ms_average"), (stats["min_ms"], "steptime_ms_minimum"),
                         (stats["max_ms"], "steptime_ms_maximum"), (stats["std_ms"], "steptime_ms_standard_deviation")):
        assert mine == pytest.approx(float(ipa[theirs]), rel=0.01), theirs
    assert doc["kpis"]["input_percent"] == pytest.approx(float(ipa["infeed_percent_average"]), abs=1.0)
    assert doc["breakdown"]["classification"] == "not"
    assert "NOT input-bound" in ipa["input_conclusion"]
