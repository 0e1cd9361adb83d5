"""The history gate: median and MAD of the last N reports judge a candidate's KPIs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from history_runs import another_run
from paths import TESTS

from tpudoctor.errors import InputError
from tpudoctor.profile.history import (
    MIN_HISTORY,
    judge_history,
    read_history,
    robust_z,
)

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

FIXTURES = TESTS / "fixtures" / "profiles"


def test_injected_ten_percent_step_time_regression_fails(real_report):
    history = [another_run(real_report, seed) for seed in range(10)]
    gate = judge_history(history, another_run(real_report, 1000, slowdown=1.10))
    assert gate.regressed and gate.verdict == "regression"
    assert "step_time_median_ms" in gate.regressed_by
    median = next(j for j in gate.kpis if j.kpi == "step_time_median_ms")
    assert median.n_history == 10 and median.robust_z > 3.5 and 7 < median.change_percent < 13
    assert "robust z" in median.reason and "significant beyond 3.5: yes" in median.reason


@pytest.mark.parametrize("seed", range(1000, 1020))
def test_run_to_run_noise_does_not_fail(real_report, seed):
    history = [another_run(real_report, s) for s in range(10)]
    gate = judge_history(history, another_run(real_report, seed))
    assert not gate.regressed, [j.reason for j in gate.kpis if j.verdict == "regression"]
    assert gate.verdict == "no_change"


def test_only_the_last_n_reports_count(real_report):
    slow_past = [another_run(real_report, s, slowdown=1.10) for s in range(10)]
    recent = [another_run(real_report, s) for s in range(10, 18)]
    candidate = another_run(real_report, 2000, slowdown=1.10)
    assert judge_history(slow_past + recent, candidate, last_n=8).regressed
    assert not judge_history(slow_past + recent, candidate, last_n=18).regressed  # the old slow runs dominate
    assert judge_history(slow_past + recent, candidate, last_n=8).n_history == 8


def test_one_outlier_in_the_history_does_not_move_the_bar(real_report):
    history = [another_run(real_report, s) for s in range(9)]
    history.append(another_run(real_report, 99, slowdown=3.0))  # one run hit a bad host
    assert judge_history(history, another_run(real_report, 1000, slowdown=1.10)).regressed


def test_improvement_is_not_a_regression(real_report):
    gate = judge_history([another_run(real_report, s) for s in range(10)], another_run(real_report, 5, slowdown=0.8))
    assert not gate.regressed
    assert next(j for j in gate.kpis if j.kpi == "step_time_median_ms").verdict == "improvement"


def test_too_little_history_is_not_judged(real_report):
    gate = judge_history([another_run(real_report, s) for s in range(MIN_HISTORY - 1)],
                         another_run(real_report, 1, slowdown=2.0))
    assert gate.verdict == "not_judged" and not gate.regressed
    assert all(j.verdict == "not_judged" and "at least" in j.reason for j in gate.kpis if j.gated)


def test_percent_kpis_move_in_points(real_report):
    history = []
    for seed in range(8):
        doc = another_run(real_report, seed)
        doc["kpis"]["input_percent"] = 1.0 + 0.2 * np.random.default_rng(seed).standard_normal()
        history.append(doc)
    candidate = another_run(real_report, 50)
    candidate["kpis"]["input_percent"] = 12.0
    gate = judge_history(history, candidate)
    assert gate.regressed_by == ("input_percent",)
    judged = next(j for j in gate.kpis if j.kpi == "input_percent")
    assert judged.in_points and judged.change > 10


def test_identical_history_uses_the_noise_floor():
    median, mad, scale, z = robust_z([10.0] * 8, 10.2)
    assert (median, mad) == (10.0, 0.0) and scale == pytest.approx(0.05) and z == pytest.approx(4.0)
    assert robust_z([50.0] * 8, 40.0, lower_is_better=False, in_points=True)[3] == pytest.approx(100.0)


@pytest.mark.parametrize("bad", [{"last_n": 0}, {"last_n": 2.5}, {"z_threshold": float("nan")},
                                 {"min_change_percent": -1}])
def test_bad_parameters_are_refused(real_report, bad):
    with pytest.raises(ValueError):
        judge_history([real_report] * 8, real_report, **bad)


def _write_reports(folder: Path, docs: list[dict]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, doc in enumerate(docs):
        path = folder / f"report-{i:02d}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


def test_history_from_a_folder_in_modification_order(real_report, tmp_path):
    docs = [another_run(real_report, s) for s in range(10)]
    paths = _write_reports(tmp_path / "history", docs)
    (tmp_path / "history" / "notes.txt").write_text("not a report")
    for age, path in enumerate(paths):  # written in the opposite order of their names
        os.utime(path, (1_700_000_000 - age * 60, 1_700_000_000 - age * 60))
    entries = read_history(str(tmp_path / "history"), last_n=8)
    assert [Path(e.name).name for e in entries] == [p.name for p in reversed(paths)][-8:]
    assert entries[-1].document["kpis"] == docs[0]["kpis"]
    gate = judge_history([e.document for e in entries], another_run(real_report, 7, slowdown=1.10),
                         history_names=[e.name for e in entries])
    assert gate.regressed and len(gate.history_names) == 8
    newest = str(paths[0])  # the candidate was written into the history folder before the gate ran
    without = read_history(str(tmp_path / "history"), last_n=8, exclude=[newest])
    assert newest not in {e.name for e in without} and len(without) == 8


def test_a_broken_report_in_the_history_is_a_clear_error(real_report, tmp_path):
    _write_reports(tmp_path / "h", [another_run(real_report, s) for s in range(3)])
    (tmp_path / "h" / "zz.json").write_text('{"schema_version": "1.0", "kind": "check"')
    with pytest.raises(InputError, match="zz.json"):
        read_history(str(tmp_path / "h"))
    with pytest.raises(InputError, match="does not exist"):
        read_history(str(tmp_path / "missing"))


def test_history_from_a_bucket_prefix(real_report, fake_gcs):
    fake_gcs.create_bucket("ci-profiles")
    docs = [another_run(real_report, s) for s in range(9)]
    for i, doc in enumerate(docs):
        fake_gcs.upload("ci-profiles", f"nightly/report-{i:02d}.json", json.dumps(doc).encode())
    fake_gcs.upload("ci-profiles", "nightly/old/report-99.json", json.dumps(docs[0]).encode())  # deeper: not read
    fake_gcs.upload("ci-profiles", "nightly-other/report.json", json.dumps(docs[0]).encode())  # other prefix
    entries = read_history("gs://ci-profiles/nightly", last_n=8)
    assert [e.name for e in entries] == [f"gs://ci-profiles/nightly/report-{i:02d}.json" for i in range(1, 9)]
    assert judge_history([e.document for e in entries], another_run(real_report, 3, slowdown=1.10)).regressed
    assert len(fake_gcs.object_names("ci-profiles")) == 11  # read only: nothing added


def test_unreadable_bucket_is_a_clear_error(fake_gcs):
    fake_gcs.create_bucket("locked")
    fake_gcs.deny("locked", "storage.objects.list")
    with pytest.raises(InputError, match="cannot list gs://locked/ci"):
        read_history("gs://locked/ci")
