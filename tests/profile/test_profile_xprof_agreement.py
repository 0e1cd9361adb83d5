"""Cross-checks on the real TPU v6e capture, with xprof itself (installed) as the oracle.

The capture has no Steps line; a TPU-shaped variant gets one built from its own XLA Modules runs
(real schema: a ``Steps`` line per TensorCore plane with ``group_id``/``step_num`` stats), because no
real TPU capture with a Steps line small enough is available.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from shared_data import SHARED_DATA

SHARED = SHARED_DATA  # ../shared/data, or TPUDOCTOR_SHARED_DATA
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

    return tpudoctor.profile.analyze(str(path)).to_dict()


def _tpu_shaped(src: Path, dst: Path, *, cores: tuple[str, ...] | None = None, one_clock: bool = False,
                infeed_ops: str | None = None) -> None:
    """A TPU-shaped capture from the real v6e one, following the real schema.

    Adds a device ``Steps`` line per TensorCore plane (one step per run of the dominant program
    ``jit_f``, each starting in the middle of the ~1 us gap before its run, with ``group_id`` and
    ``step_num`` stats). Options: keep only ``cores``; ``one_clock`` drops the ops'
    ``device_offset_ps``/``device_duration_ps`` so ops, modules and steps share one timeline;
    ``infeed_ops`` (a regex on HLO op names, e.g. ``copy-done\\.5``) relabels those ops as
    category ``infeed``, as a real capture with infeed carries it, to make input-bound cases.
    """
    from tpudoctor.captures.schema import message_class

    space = message_class("XSpace").FromString(src.read_bytes())
    if cores is not None:
        keep = [p for p in space.planes if not p.name.startswith("/device:TPU:") or p.name in cores]
        del space.planes[:]
        space.planes.extend(keep)
    for plane in space.planes:
        if not plane.name.startswith("/device:TPU:"):
            continue
        stat_ids = {m.name: k for k, m in plane.stat_metadata.items()}

        def stat_id(name: str, plane=plane, stat_ids=stat_ids) -> int:
            if name not in stat_ids:
                k = max([*plane.stat_metadata.keys(), 0]) + 1
                plane.stat_metadata[k].id, plane.stat_metadata[k].name = k, name
                stat_ids[name] = k
            return stat_ids[name]

        if one_clock:
            device_clock = {stat_ids.get("device_offset_ps"), stat_ids.get("device_duration_ps")}
            for line in plane.lines:
                for event in line.events:
                    keep = [st for st in event.stats if st.metadata_id not in device_clock]
                    if len(keep) != len(event.stats):
                        del event.stats[:]
                        event.stats.extend(keep)
        if infeed_ops:
            category = stat_id("hlo_category")
            for meta in plane.event_metadata.values():
                if re.match(rf"^%(?:{infeed_ops}) = ", meta.name):
                    for st in meta.stats:
                        if st.metadata_id == category:
                            st.ClearField("ref_value")
                            st.str_value = "infeed"
        modules = next(line for line in plane.lines if line.name == "XLA Modules")
        program = next(k for k, m in plane.event_metadata.items() if m.name.startswith("jit_f("))
        runs = sorted((e.offset_ps, e.offset_ps + e.duration_ps) for e in modules.events if e.metadata_id == program)
        line = plane.lines.add(id=100, name="Steps", timestamp_ns=modules.timestamp_ns)
        bounds = [runs[0][0]] + [(runs[i - 1][1] + runs[i][0]) // 2 for i in range(1, len(runs))] + [runs[-1][1]]
        for i in range(len(runs)):
            k = max(plane.event_metadata.keys()) + 1
            plane.event_metadata[k].id, plane.event_metadata[k].name = k, str(i)
            event = line.events.add(metadata_id=k, offset_ps=bounds[i], duration_ps=bounds[i + 1] - bounds[i])
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
    assert doc["findings"][0]["id"] == "host-offload" and doc["findings"][0]["status"] == "FAIL"


def test_v6e_breakdown_and_host_offload_finding_agree(v6e_copy):
    """The step breakdown has a host-offload part: the copies are not counted as compute (before,
    the breakdown said compute 90.3 % while the finding said copies take 96.5 % of device time)."""
    doc = _analyze(v6e_copy)
    pct = doc["breakdown"]["percent"]
    offload = next(f for f in doc["findings"] if f["id"] == "host-offload")["evidence"]
    device_work = pct["compute"] + pct["host_offload"]  # the step's device op time
    assert pct["compute"] < 10 and pct["host_offload"] > 80
    assert 100 * pct["host_offload"] / device_work == pytest.approx(offload["share_of_device_percent"], abs=2.0)
    assert offload["share_of_step_percent"] == pytest.approx(pct["host_offload"], abs=0.01)
    assert sum(pct.values()) == pytest.approx(100, abs=0.1)
    for step in doc["breakdown"]["per_step"]:
        assert step["host_offload_ms"] > step["compute_ms"]


def test_v6e_duty_cycle_agrees_with_xprof_overview(v6e_copy):
    overview = _props(_xprof(v6e_copy, "overview_page"), "device_duty_cycle_percent")
    doc = _analyze(v6e_copy)
    xprof_duty = float(overview["device_duty_cycle_percent"].rstrip("%"))
    xprof_idle = float(overview["device_idle_time_percent"].rstrip("%"))
    assert doc["device_ops"]["duty_cycle_percent"] == pytest.approx(xprof_duty, abs=1.0)
    assert doc["device_ops"]["idle_percent"] == pytest.approx(xprof_idle, abs=1.0)


CASES = {
    # name: (builder options, xprof's expected input classification, tpudoctor's expected verdict)
    "four-cores": ({}, "not", "host-bound"),
    "one-core-one-clock": ({"cores": ("/device:TPU:2",), "one_clock": True}, "not", "host-bound"),
    "input-bound-one-core": ({"cores": ("/device:TPU:2",), "one_clock": True, "infeed_ops": r"copy-done(?:\.\d+)?"},
                             "highly", "input-bound"),
    "partly-input-bound-four-cores": ({"infeed_ops": r"copy-done\.5"}, "highly", "host-bound"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_steps_line_capture_agrees_with_xprof_input_pipeline(v6e_copy, tmp_path, case):
    options, classification, verdict = CASES[case]
    shaped = tmp_path / "tpu_steps.xplane.pb"
    _tpu_shaped(v6e_copy, shaped, **options)
    ipa = _props(_xprof(shaped, "input_pipeline_analyzer"), "steptime_ms_average")
    doc = _analyze(shaped)
    assert doc["steps"]["method"] == "device-steps-line"
    stats = doc["steps"]["stats"]
    assert stats["count"] == 100
    for mine, theirs in ((stats["mean_ms"], "steptime_ms_average"), (stats["min_ms"], "steptime_ms_minimum"),
                         (stats["max_ms"], "steptime_ms_maximum"), (stats["std_ms"], "steptime_ms_standard_deviation")):
        assert mine == pytest.approx(float(ipa[theirs]), rel=0.01), theirs
    step_ms = float(ipa["steptime_ms_average"])
    assert doc["kpis"]["input_percent"] == pytest.approx(float(ipa["infeed_percent_average"]), abs=1.0)
    assert doc["breakdown"]["classification"] == classification
    xprof_idle = 100 * float(ipa["tc_idle_ms_average"]) / step_ms
    if "one-core" in case:
        assert doc["kpis"]["idle_percent"] == pytest.approx(xprof_idle, abs=1.0)
    # Not on four cores: there xprof files whole program runs under a neighbouring step where two runs
    # touch (zero gap) or where the device clock (device_offset_ps) runs ~100 ms off the synchronised
    # one, leaving steps with 0 ms compute; its idle figure then swings between 11 % and 36 % for the
    # same ops. tpudoctor keeps each run in its own step (idle 9.7 %).
    assert doc["verdict"] == verdict, doc["verdict_reason"]
    if classification == "highly":
        assert "HIGHLY input-bound" in ipa["input_conclusion"]
        assert any(f["id"] == "input-bound" and f["severity"] == "high" for f in doc["findings"])
    else:
        assert "NOT input-bound" in ipa["input_conclusion"]
