"""Interval helpers on small columnar inputs, multi-host captures that never synchronise, and bad inputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tpudoctor.profile
from tpudoctor.cli import main
from tpudoctor.profile.analysis.events import merged, outermost, overlap_ps, self_time_ps, union_ps

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "profiles"


def test_self_time_subtracts_direct_children_only():
    frame = pd.DataFrame({"plane_id": [0] * 5 + [1] * 2, "line_id": [1] * 7,
                          "start_ps": [0, 10, 20, 25, 100, 0, 50], "duration_ps": [50, 5, 20, 3, 10, 40, 10]})
    # 0..50 holds 10..15 and 20..40 (which holds 25..28); plane 1 is a separate, flat line.
    assert self_time_ps(frame).tolist() == [25, 5, 17, 3, 10, 40, 10]


def test_union_merge_and_window_overlap():
    starts, ends = np.array([0, 5, 20, 22]), np.array([10, 12, 25, 30])
    assert union_ps(starts, ends) == 12 + 10
    ms, me = merged(starts, ends)
    assert ms.tolist() == [0, 20] and me.tolist() == [12, 30]
    windows = overlap_ps(starts, ends, np.array([0, 11, 26, 40]), np.array([11, 21, 40, 50]))
    assert windows.tolist() == [11, 2, 4, 0]


def test_outermost_drops_same_name_nesting():
    frame = pd.DataFrame({"plane_id": [0, 0, 0, 0], "line_id": [1, 1, 1, 1],
                          "name": ["PjitFunction(f)", "PjitFunction(f)", "PjitFunction(g)", "PjitFunction(f)"],
                          "start_ps": [0, 1, 2, 20], "duration_ps": [10, 5, 3, 5]})
    kept = outermost(frame)
    assert kept["start_ps"].tolist() == [0, 2, 20]


def test_unrelated_captures_in_one_run_name_no_straggler(tmp_path):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    # Two "hosts" that never synchronise: a slower mean step is no straggler (nobody waits for it).
    shutil.copyfile(FIXTURES / "jax_compute_bound" / "localhost.xplane.pb", run / "worker-0.xplane.pb")
    shutil.copyfile(FIXTURES / "jax_recompiling" / "localhost.xplane.pb", run / "worker-1.xplane.pb")
    report = tpudoctor.profile.analyze(str(tmp_path))
    doc = report.to_dict()
    assert {h["host"] for h in doc["hosts"]} == {"worker-0", "worker-1"}
    assert doc["straggler"] is None
    assert "no host waits for another" in report.cross_host.straggler.decided_by


def test_profile_analyze_bad_input_exits_2(tmp_path, capsys):
    bad = tmp_path / "empty.xplane.pb"
    bad.write_bytes(b"")
    assert main(["profile", "analyze", str(bad), "--format", "html"]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_compare_formats(tmp_path, capsys, fmt):
    a = tmp_path / "a.json"
    assert main(["profile", "analyze", str(FIXTURES / "tf_input_bound"), "--format", "json", "-o", str(a)]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(FIXTURES / "tf_compute_bound"), "--format", fmt]) == 0  # no gate: exit 0
    out = capsys.readouterr().out
    assert "input_percent" in out and ("better" in out)


@pytest.mark.parametrize("threshold", ["nan%", "nan", "NaN%", "inf%", "-inf%", "infinity", "-5%", "-0.1"])
def test_compare_gate_threshold_that_would_turn_the_gate_off_is_a_usage_error(tmp_path, capsys, threshold):
    a = tmp_path / "a.json"
    assert main(["profile", "analyze", str(FIXTURES / "jax_steady"), "--format", "json", "-o", str(a)]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(a), f"--fail-on-regression={threshold}"]) == 2
    err = capsys.readouterr().err
    assert "--fail-on-regression" in err and "Traceback" not in err


V1_REPORT = Path(__file__).resolve().parent / "data" / "profile" / "report_v1_tf_input_bound.json"


def test_compare_reads_a_schema_1_report_saved_by_the_previous_version(tmp_path, capsys):
    """``report_v1_tf_input_bound.json`` was written by ``profile analyze --format json`` before 2.0."""
    import json

    from tpudoctor.profile.compare import load_document
    from tpudoctor.schema import validate

    assert json.loads(V1_REPORT.read_text())["schema_version"] == "1.0"
    doc = load_document(str(V1_REPORT))
    assert doc["schema_version"] == "2.1"
    finding = doc["findings"][0]
    assert finding["id"] == "input-bound" and finding["kind"] == "profile" and finding["status"] == "FAIL"
    assert "prefetch" in finding["remediation"]["text"] and finding["scope"]["hosts"] == []
    validate(doc, "profile_diagnosis")
    new = tmp_path / "new.json"
    assert main(["profile", "analyze", str(FIXTURES / "tf_input_bound"), "--format", "json", "-o", str(new)]) == 0
    capsys.readouterr()
    assert main(["compare", str(V1_REPORT), str(new), "--format", "json", "--fail-on-regression", "50%"]) == 0
    result = json.loads(capsys.readouterr().out)
    same = {row["kpi"]: row["direction"] for row in result["kpis"]}
    assert same["step_time_mean_ms"] == "same" and same["input_percent"] == "same"
