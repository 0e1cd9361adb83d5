"""``tpudoctor compare`` through the CLI: comparability first, the op-level diff, --force, saved
reports with and without a per-op table, and the history gate (--history, --last)."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from history_runs import another_run
from paths import TESTS
from shared_data import SHARED_DATA
from xspace_edits import edited

from tpudoctor.cli import main
from tpudoctor.exitcodes import ExitCode

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

FIXTURES = TESTS / "fixtures" / "profiles"
SHARED = SHARED_DATA  # ../shared/data, or TPUDOCTOR_SHARED_DATA
V6E = SHARED / "xprof_tpu_inference_2.xplane.pb"
needs_v6e = pytest.mark.skipif(not V6E.exists(), reason=f"real TPU capture not found at {V6E} (../shared/data is absent)")
COMPUTE = FIXTURES / "jax_compute_bound" / "localhost.xplane.pb"


def _compare(*argv: str, capsys) -> tuple[int, str, str]:
    code = main(["compare", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _analyze(path: Path, out: Path) -> dict:
    assert main(["profile", "analyze", str(path), "--format", "json", "-o", str(out)]) in (0, 1)  # 1: FAIL findings
    return json.loads(out.read_text())


def test_one_slower_op_is_the_first_mover_in_every_format(tmp_path, capsys):
    slower = edited(COMPUTE, tmp_path / "slower.xplane.pb", "wrapped_tanh.2", factor=3.0)
    code, out, _ = _compare(str(COMPUTE), str(slower), "--format", "json", capsys=capsys)
    assert code == ExitCode.OK
    result = json.loads(out)
    assert result["comparable"] is True and result["comparability"]["reasons"] == []
    diff = result["op_diff"]
    first = diff["movers"][0]
    assert (first["op_name"], first["status"]) == ("wrapped_tanh.2", "slower")
    assert first["delta_avg_time_percent"] == pytest.approx(200, abs=0.5)
    assert diff["counts"] == {"added": 0, "removed": 0, "slower": 1, "faster": 0}
    assert diff["time_basis"] == "per-step"
    # the comparability block comes before the numbers in every human format
    for fmt, first_mover in (("text", r"\n  wrapped_tanh\.2 +slower "), ("markdown", r"\| wrapped_tanh\.2 \| slower \|"),
                             ("html", "<tr><td>wrapped_tanh\\.2</td><td>slower</td>")):
        code, out, _ = _compare(str(COMPUTE), str(slower), "--format", fmt, capsys=capsys)
        assert code == ExitCode.OK
        assert out.index("omparable") < out.index("step_time_mean_ms") < re.search(first_mover, out).start()
        movers_part = out[out.index("top movers") if fmt == "text" else out.index("wrapped_tanh.2") - 200:]
        assert movers_part.count("slower") >= 1


def test_slower_steps_trip_the_gate_and_junit_says_so(tmp_path, capsys):
    doc = _analyze(FIXTURES / "jax_compute_bound", tmp_path / "a.json")
    doc["kpis"]["step_time_mean_ms"] *= 1.2  # the same job, its steps 20 % slower
    (tmp_path / "b.json").write_text(json.dumps(doc))
    code, out, _ = _compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-on-regression", "5%",
                            "--format", "junit", capsys=capsys)
    assert code == ExitCode.FINDINGS
    suite = ET.fromstring(out).find("testsuite")
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["COMPARE-GATE regression vs baseline"]  # the finding the exit status is judged on


@pytest.mark.needs_shared_data
@needs_v6e
def test_v6e_against_cpu_is_not_comparable_and_exits_2(tmp_path, capsys):
    shutil.copyfile(V6E, tmp_path / "v6e.xplane.pb")
    tpu = _analyze(tmp_path / "v6e.xplane.pb", tmp_path / "v6e.json")
    assert tpu["op_table"]["ops"] and tpu["roofline"]["program"]["mfu_percent"] > 0
    cpu = tmp_path / "cpu.json"
    _analyze(FIXTURES / "jax_steady", cpu)
    code, out, err = _compare(str(tmp_path / "v6e.json"), str(cpu), "--fail-on-regression", "5%",
                              "--format", "json", capsys=capsys)
    assert code == ExitCode.USAGE_ERROR
    assert "not comparable: different device type: tpu in the baseline, cpu in the candidate" in err
    assert "--force" in err
    result = json.loads(out)
    assert result["comparable"] is False and not result["regressed"]
    assert any("device kind: TPU v6 Lite in the baseline" in r for r in result["comparability"]["reasons"])
    code, out, _ = _compare(str(tmp_path / "v6e.json"), str(cpu), "--fail-on-regression", "5%", capsys=capsys)
    assert code == ExitCode.USAGE_ERROR and "\nComparability\n  NOT COMPARABLE: different device type" in out
    # --force judges anyway: the CPU job idles 12 points more of its step, a regression beyond 5
    code, out, _ = _compare(str(tmp_path / "v6e.json"), str(cpu), "--fail-on-regression", "5%", "--force",
                            "--format", "json", capsys=capsys)
    result = json.loads(out)
    assert code == ExitCode.FINDINGS and result["forced"] is True and result["regressed_by"] == ["idle_percent"]
    # without a gate, a comparison that is not comparable is reported, exit 0
    assert _compare(str(tmp_path / "v6e.json"), str(cpu), capsys=capsys)[0] == ExitCode.OK


@pytest.mark.needs_shared_data
@needs_v6e
def test_tpu_op_diff_has_rate_deltas(tmp_path, capsys):
    shutil.copyfile(V6E, tmp_path / "v6e.xplane.pb")
    slower = edited(V6E, tmp_path / "slower.xplane.pb", "broadcast_add_fusion.1", factor=40.0)
    a, b = _analyze(tmp_path / "v6e.xplane.pb", tmp_path / "a.json"), tmp_path / "b.json"
    _analyze(slower, b)
    assert a["versions"] == json.loads(b.read_text())["versions"]
    code, out, _ = _compare(str(tmp_path / "a.json"), str(b), "--format", "json", capsys=capsys)
    diff = json.loads(out)["op_diff"]
    first = diff["movers"][0]
    assert first["op_name"] == "broadcast_add_fusion.1" and first["status"] == "slower"
    assert set(diff["rates"]) == {"flop_rate_flops_per_s", "hbm_bw_bytes_per_s", "memory_bw_bytes_per_s"}
    # 40x the time for the same FLOPs: the FLOP rate drops to a 40th
    assert first["candidate_flop_rate_flops_per_s"] == pytest.approx(first["baseline_flop_rate_flops_per_s"] / 40,
                                                                     rel=1e-3)
    assert first["delta_flop_rate_flops_per_s"] < 0 and first["delta_hbm_bw_bytes_per_s"] < 0
    code, out, _ = _compare(str(tmp_path / "a.json"), str(b), "--format", "markdown", capsys=capsys)
    assert "FLOP rate -" in out and "GFLOP/s" in out


def test_old_report_without_op_table_compares_kpis_with_a_note(tmp_path, capsys):
    doc = _analyze(FIXTURES / "jax_compute_bound", tmp_path / "new.json")
    old = copy.deepcopy(doc)
    for key in ("op_table", "roofline", "versions"):
        old.pop(key)
    old["schema_version"] = "2.0"
    (tmp_path / "old.json").write_text(json.dumps(old))
    code, out, _ = _compare(str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--format", "json",
                            capsys=capsys)
    result = json.loads(out)
    assert code == ExitCode.OK and result["op_diff"] is None
    assert "no per-op table in the baseline" in result["op_diff_note"]
    assert {r["kpi"] for r in result["kpis"]} >= {"step_time_mean_ms", "compile_ms"}
    code, out, _ = _compare(str(tmp_path / "old.json"), str(tmp_path / "new.json"), capsys=capsys)
    assert "Op-level diff: no per-op table in the baseline" in out


def test_saved_report_carries_a_bounded_op_table(tmp_path):
    doc = _analyze(FIXTURES / "jax_compute_bound", tmp_path / "r.json")
    table = doc["op_table"]
    assert table["max_ops"] == 200 and len(table["ops"]) == min(table["ops_total"], 200) > 3
    times = [op["total_time_ps"] for op in table["ops"]]
    assert times == sorted(times, reverse=True)
    assert {"program_id", "op_name", "occurrences", "total_time_ps"} <= set(table["ops"][0])


@pytest.mark.parametrize("argv,message", [
    (["a"], "compare wants two profiles"),
    (["a", "b", "c"], "compare wants two profiles"),
    (["a", "b", "--last", "3"], "--last counts history reports"),
])
def test_usage_errors(argv, message, capsys):
    assert main(["compare", *argv]) == ExitCode.USAGE_ERROR
    assert message in capsys.readouterr().err


# ------------------------------------------------------------------ history gate



def _history(folder: Path, docs: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, doc in enumerate(docs):
        path = folder / f"run-{i:02d}.json"
        path.write_text(json.dumps(doc))
        os.utime(path, (1_700_000_000 + i * 60, 1_700_000_000 + i * 60))
    return folder


def test_history_gate_fails_an_injected_ten_percent_regression(real_report, tmp_path, capsys):
    history = _history(tmp_path / "history", [another_run(real_report, s) for s in range(10)])
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(another_run(real_report, 1000, slowdown=1.10)))
    code, out, _ = _compare("--history", str(history), str(candidate), "--format", "json", capsys=capsys)
    assert code == ExitCode.FINDINGS
    result = json.loads(out)
    assert result["gate"]["verdict"] == "regression" and "step_time_median_ms" in result["gate"]["regressed_by"]
    assert result["gate"]["n_history"] == 10 and result["comparable"]
    code, out, _ = _compare("--history", str(history), str(candidate), capsys=capsys)
    assert code == ExitCode.FINDINGS and "REGRESSION against the history: step_time_median_ms" in out
    code, out, _ = _compare("--history", str(history), str(candidate), "--format", "junit", capsys=capsys)
    suite = ET.fromstring(out).find("testsuite")
    failures = [c.find("failure") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert len(failures) == 1 and "step_time_median_ms" in failures[0].get("message")
    code, out, _ = _compare("--history", str(history), str(candidate), "--format", "markdown", capsys=capsys)
    assert "- [✗] COMPARE-GATE" in out and "| step_time_median_ms (gated) | REGRESSION |" in out


@pytest.mark.parametrize("seed", range(1000, 1010))
def test_history_gate_passes_run_to_run_noise(real_report, tmp_path, capsys, seed):
    history = _history(tmp_path / "history", [another_run(real_report, s) for s in range(10)])
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(another_run(real_report, seed)))
    code, out, _ = _compare("--history", str(history), str(candidate), "--format", "json", capsys=capsys)
    assert code == ExitCode.OK, out
    assert json.loads(out)["gate"]["verdict"] == "no_change"


def test_history_gate_counts_only_the_last_n(real_report, tmp_path, capsys):
    # 8 old runs 10 % slower, then 8 recent ones at the normal speed: the candidate at normal speed
    # passes against the last 8 and is an improvement, not a regression, against all 16
    docs = [another_run(real_report, s, slowdown=1.10) for s in range(8)] + [another_run(real_report, s) for s in range(8, 16)]
    history = _history(tmp_path / "history", docs)
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(another_run(real_report, 2000, slowdown=1.10)))
    assert _compare("--history", str(history), str(candidate), "--last", "8", capsys=capsys)[0] == ExitCode.FINDINGS
    code, out, _ = _compare("--history", str(history), str(candidate), "--last", "8", "--format", "json",
                            capsys=capsys)
    assert json.loads(out)["gate"]["last_n"] == 8 and json.loads(out)["gate"]["n_history"] == 8


def test_history_gate_with_too_little_history_says_so(real_report, tmp_path, capsys):
    history = _history(tmp_path / "history", [another_run(real_report, s) for s in range(3)])
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(another_run(real_report, 5, slowdown=1.5)))
    code, _, err = _compare("--history", str(history), str(candidate), capsys=capsys)
    assert code == ExitCode.USAGE_ERROR
    assert "too little history" in err and "3 report(s), at least 5" in err


def test_history_gate_leaves_out_the_candidate_written_into_the_history(real_report, tmp_path, capsys):
    history = _history(tmp_path / "history", [another_run(real_report, s) for s in range(8)])
    candidate = history / "run-99.json"
    candidate.write_text(json.dumps(another_run(real_report, 1000, slowdown=1.10)))
    code, out, _ = _compare("--history", str(history), str(candidate), "--format", "json", capsys=capsys)
    assert code == ExitCode.FINDINGS and json.loads(out)["gate"]["n_history"] == 8


def test_history_gate_from_a_bucket(real_report, fake_gcs, tmp_path, capsys):
    fake_gcs.create_bucket("ci-profiles")
    for i in range(9):
        fake_gcs.upload("ci-profiles", f"nightly/run-{i:02d}.json", json.dumps(another_run(real_report, i)).encode())
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(another_run(real_report, 1000, slowdown=1.10)))
    code, out, _ = _compare("--history", "gs://ci-profiles/nightly", str(candidate), "--format", "json",
                            capsys=capsys)
    assert code == ExitCode.FINDINGS and json.loads(out)["gate"]["n_history"] == 9
    assert len(fake_gcs.object_names("ci-profiles")) == 9  # read only


@pytest.mark.parametrize("argv,message", [
    (["--history", "H", "a", "b"], "give only the candidate"),
    (["--history", "H", "a", "--fail-on-regression", "5%"], "--fail-on-regression compares two profiles"),
    (["--history", "H", "a", "--last", "0"], "--last must be at least 1"),
])
def test_history_usage_errors(argv, message, capsys):
    assert main(["compare", *argv]) == ExitCode.USAGE_ERROR
    assert message in capsys.readouterr().err


def test_missing_history_folder_is_an_input_error(real_report, tmp_path, capsys):
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(real_report))
    code, _, err = _compare("--history", str(tmp_path / "nope"), str(candidate), capsys=capsys)
    assert code == ExitCode.USAGE_ERROR and "does not exist" in err


def test_history_gate_refuses_a_candidate_from_other_hardware(real_report, tmp_path, capsys):
    """A candidate capture of two hosts against a one-host history: not comparable, exit 2 unless --force."""
    history = _history(tmp_path / "history", [another_run(real_report, s) for s in range(8)])
    run = tmp_path / "logdir" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    for worker in ("worker-0", "worker-1"):
        shutil.copyfile(COMPUTE, run / f"{worker}.xplane.pb")
    code, out, err = _compare("--history", str(history), str(tmp_path / "logdir"), "--format", "json",
                              capsys=capsys)
    assert code == ExitCode.USAGE_ERROR and "not comparable with the latest history report" in err
    assert "number of hosts: 1 in the baseline, 2 in the candidate" in err
    assert json.loads(out)["comparable"] is False
    code, out, _ = _compare("--history", str(history), str(tmp_path / "logdir"), "--force", "--format", "json",
                            capsys=capsys)
    assert code in (ExitCode.OK, ExitCode.FINDINGS) and json.loads(out)["gate"]["verdict"] != "not_judged"


def test_mfu_is_compared_where_both_have_it(tmp_path, capsys):
    doc = _analyze(FIXTURES / "jax_compute_bound", tmp_path / "a.json")
    doc["kpis"]["mfu_percent"], worse = 40.0, copy.deepcopy(doc)
    worse["kpis"]["mfu_percent"] = 30.0
    (tmp_path / "a.json").write_text(json.dumps(doc))
    (tmp_path / "b.json").write_text(json.dumps(worse))
    code, out, _ = _compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "json", capsys=capsys)
    row = next(r for r in json.loads(out)["kpis"] if r["kpi"] == "mfu_percent")
    assert (row["delta"], row["direction"]) == (-10.0, "worse")


def test_history_in_a_bucket_we_may_not_list_names_the_role(real_report, fake_gcs, tmp_path, capsys):
    fake_gcs.create_bucket("locked")
    fake_gcs.deny("locked", "storage.objects.list")
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(real_report))
    code, _, err = _compare("--history", "gs://locked/ci", str(candidate), capsys=capsys)
    assert code == ExitCode.USAGE_ERROR
    assert "cannot list gs://locked/ci: permission denied" in err and "roles/storage.objectViewer" in err
    assert "gcloud storage buckets add-iam-policy-binding gs://locked" in err


# ------------------------------------------------------------------ inputs that are not what compare reads
# (the hostile probe of 2026-12-04: N15, N25, N28)
GOODPUT_LOG = TESTS / "fixtures" / "goodput" / "maxtext_restart.log"


@pytest.fixture(scope="module")
def foreign_reports(tmp_path_factory) -> dict[str, Path]:
    """Real reports of other kinds, as the commands write them: a check report and a goodput report."""
    folder = tmp_path_factory.mktemp("foreign")
    check, goodput = folder / "check.json", folder / "goodput.json"
    main(["check", "--step", "4", "--log-file", str(GOODPUT_LOG), "--format", "json", "-o", str(check),
          "--exit-zero"])
    assert main(["goodput", str(GOODPUT_LOG), "--format", "json", "-o", str(goodput)]) == 0
    return {"check": check, "goodput": goodput}


@pytest.mark.parametrize("flag_or_env", ["flag", "env"])
def test_a_cluster_address_without_a_port_is_a_usage_error_naming_where_it_came_from(flag_or_env, capsys,
                                                                                     monkeypatch):
    argv = [str(FIXTURES / "jax_steady"), str(FIXTURES / "jax_input_bound")]
    if flag_or_env == "flag":
        argv += ["--cluster", "bogus"]
    else:
        monkeypatch.setenv("TPUDOCTOR_CLUSTER", "bogus")
    code, _, err = _compare(*argv, capsys=capsys)
    assert code == ExitCode.USAGE_ERROR
    assert ("--cluster 'bogus'" if flag_or_env == "flag" else "TPUDOCTOR_CLUSTER 'bogus'") in err
    assert "ValueError" not in err


def test_cluster_with_saved_reports_is_refused_as_a_flag_and_noted_from_the_environment(real_report, tmp_path,
                                                                                        capsys, monkeypatch):
    report = tmp_path / "p1.json"
    report.write_text(json.dumps(real_report))
    code, _, err = _compare(str(report), str(report), "--cluster", "tcp://127.0.0.1:8786", capsys=capsys)
    assert code == ExitCode.USAGE_ERROR and "saved reports: there is nothing to analyse" in err
    monkeypatch.setenv("TPUDOCTOR_CLUSTER", "tcp://127.0.0.1:8786")
    code, _, err = _compare(str(report), str(report), capsys=capsys)
    assert code == ExitCode.OK and "TPUDOCTOR_CLUSTER is not used" in err


def test_a_report_of_another_kind_is_named_by_its_kind(foreign_reports, real_report, tmp_path, capsys):
    check = str(foreign_reports["check"])
    code, _, err = _compare(check, check, capsys=capsys)
    assert code == ExitCode.USAGE_ERROR
    assert "is a tpudoctor check report, not a profile report" in err
    assert "compare reads profile reports" in err and "KeyError" not in err


def test_history_names_a_goodput_report_among_the_profile_reports(foreign_reports, real_report, tmp_path, capsys):
    history = _history(tmp_path / "mixed", [another_run(real_report, s) for s in range(3)])
    shutil.copy(foreign_reports["goodput"], history / "goodput.json")
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(real_report))
    code, _, err = _compare("--history", str(history), str(candidate), capsys=capsys)
    assert code == ExitCode.USAGE_ERROR
    assert "goodput.json is a tpudoctor goodput report, not a profile report" in err
    assert "--history reads profile reports" in err and "schema_version" not in err


@pytest.mark.parametrize(("make", "said"), [("fifo", "is a FIFO (named pipe), not a profile"),
                                            ("/dev/null", "is a character device, not a profile")])
def test_a_fifo_or_a_device_is_named_for_what_it_is(make, said, real_report, tmp_path, capsys):
    report = tmp_path / "p1.json"
    report.write_text(json.dumps(real_report))
    path = "/dev/null"
    if make == "fifo":
        path = str(tmp_path / "fifo.json")
        os.mkfifo(path)
    code, _, err = _compare(path, str(report), capsys=capsys)
    assert code == ExitCode.USAGE_ERROR and said in err and "(it is empty)" not in err


@pytest.mark.parametrize("argv_head", [["compare"], ["merge"], ["profile", "analyze"]])
@pytest.mark.parametrize(("uri", "said"), [("gs://", "names no bucket"),
                                           ("gs://Bad_Bucket!/x", "'Bad_Bucket!' is not a valid bucket name")])
def test_a_gs_uri_that_names_no_bucket_or_a_bad_one_is_said_before_any_lookup(argv_head, uri, said, capsys):
    """Probe N24: compare and merge said '(it is empty)' or went on to the credentials lookup."""
    extra = [str(FIXTURES / "jax_steady")] if argv_head == ["compare"] else []
    assert main([*argv_head, uri, *extra]) == 2
    assert said in capsys.readouterr().err
