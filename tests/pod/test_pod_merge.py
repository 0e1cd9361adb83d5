"""tpudoctor merge: per-worker reports the workers wrote themselves, from files, a folder or gs://."""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET

import pytest
from paths import TESTS

from tpudoctor.cli import main
from tpudoctor.findings import Report, Status
from tpudoctor.pod.merge import WorkerOutcome, merge_outcomes
from tpudoctor.testing.fake_host import build_fake_tpu_host
from tpudoctor.testing.pod_reports import write_worker_reports

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]


@pytest.fixture
def worker_report(gcp_env, monkeypatch, tmp_path):
    """One real report, written by a worker itself through -o with the {worker} placeholder."""
    for key, value in build_fake_tpu_host(tmp_path / "host", "v4", chips=4).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TPU_WORKER_ID", "5")  # what GKE sets on each TPU pod
    monkeypatch.setenv("TPU_WORKER_HOSTNAMES", ",".join(f"pod-{i}" for i in range(8)))
    assert main(["check", "NODE-005", "NODE-004", "--format", "json", "-o", str(tmp_path / "out" / "{worker}.json")]) \
        in (0, 1)
    doc = json.loads((tmp_path / "out" / "5.json").read_text())
    assert doc["environment"]["worker"] == "5" and doc["environment"]["slice_workers"] == 8
    assert doc["schema_version"] == "2.1"
    return doc


def test_merge_a_folder_of_64_reports(worker_report, tmp_path, capsys):
    write_worker_reports(worker_report, tmp_path / "run", 64, problems={3: "NODE-005", 7: "NODE-005"},
                         slice_workers=64)
    code = main(["merge", str(tmp_path / "run"), "--format", "json", "-o", str(tmp_path / "merged.json")])
    doc = json.loads((tmp_path / "merged.json").read_text())
    assert code == 1
    held = next(r for r in doc["results"] if r["id"] == "NODE-005")
    assert held["scope"]["workers"] == ["3", "7"] and held["message"].startswith("FAIL on 2 of 64 workers (3, 7)")
    assert doc["summary"]["root_cause"] == "NODE-005"
    assert len(doc["workers"]) == 64 and doc["workers"]["63"]["report"]["target"]["worker"] == "63"
    assert next(r for r in doc["results"] if r["id"] == "POD-003")["status"] == "PASS"
    # The merged document is itself a valid check report (additive schema).
    from tpudoctor.schema import validate
    validate(doc, "check_report")
    # Text beyond 64 workers is a summary line per step; up to 64 a matrix.
    assert main(["merge", str(tmp_path / "run")]) == 1
    text = capsys.readouterr().out
    assert "0123456789012345678901234567890123456789012345678901234567890123" in text
    # Where a merged finding holds is said once, by its message, not again in its title.
    assert "FAIL on 2 of 64 workers (3, 7)" in text and "(on workers 3, 7)" not in text
    assert main(["merge", str(tmp_path / "run"), "--format", "markdown"]) == 1
    markdown = capsys.readouterr().out
    assert "FAIL on 2 of 64 workers (3, 7)" in markdown and "(on workers 3, 7)" not in markdown


def test_missing_and_unreadable_worker_reports(worker_report, tmp_path):
    paths = write_worker_reports(worker_report, tmp_path / "run", 8, slice_workers=8)
    paths[6].unlink()
    paths[2].write_text('{"schema_version": "2.1", "kind": "check", "results": [')  # cut off mid-upload
    assert main(["merge", str(tmp_path / "run"), "--format", "json", "-o", str(tmp_path / "m.json")]) == 1
    results = {r["id"]: r for r in json.loads((tmp_path / "m.json").read_text())["results"]}
    assert results["POD-003"]["status"] == "FAIL" and results["POD-003"]["scope"]["workers"] == ["6"]
    assert results["POD-003"]["message"] == "1 of 8 workers have no report (6)"
    assert results["POD-007"]["status"] == "ERROR" and results["POD-007"]["scope"]["workers"] == ["2"]


def test_merge_reports_from_gcs(worker_report, fake_gcs, tmp_path, monkeypatch):
    fake_gcs.create_bucket("pod-reports")
    for path in write_worker_reports(worker_report, tmp_path / "run", 64, problems={9: "NODE-004"}):
        fake_gcs.upload("pod-reports", f"run-1/{path.name}", path.read_bytes())
    fake_gcs.upload("pod-reports", "run-1/notes.txt", b"not a report")
    code = main(["merge", "gs://pod-reports/run-1/", "--format", "json", "-o", str(tmp_path / "merged.json")])
    doc = json.loads((tmp_path / "merged.json").read_text())
    assert code == 1 and len(doc["workers"]) == 64
    assert doc["workers"]["9"]["source"] == "gs://pod-reports/run-1/9.json"
    chips = next(r for r in doc["results"] if r["id"] == "NODE-004")
    assert chips["scope"]["workers"] == ["9"]
    assert fake_gcs.object_names("pod-reports").count("run-1/notes.txt") == 1  # merge only reads


def test_worker_writes_its_report_to_gcs_only_when_asked(gcp_env, fake_gcs, monkeypatch, tmp_path):
    fake_gcs.create_bucket("pod-reports")
    monkeypatch.setenv("TPU_WORKER_ID", "3")
    main(["check", "NODE-005", "--format", "json", "-o", "gs://pod-reports/run-2/{worker}.json"])
    assert fake_gcs.object_names("pod-reports") == ["run-2/3.json"]
    main(["check", "NODE-005", "--format", "json", "-o", "gs://pod-reports/run-2/{worker}.json"])  # a rerun replaces
    assert main(["merge", "gs://pod-reports/run-2/", "--format", "json", "-o", str(tmp_path / "m.json")]) == 0


def test_placeholder_without_a_worker_number_is_a_usage_error(gcp_env, capsys, tmp_path):
    assert main(["check", "NODE-005", "-o", str(tmp_path / "{worker}.json")]) == 2
    assert "worker number is unknown" in capsys.readouterr().err
    assert main(["check", "NODE-005", "-o", str(tmp_path / "{host}.json")]) in (0, 1)


def _outcome(worker, report, sent_offset_s, received_offset_s):
    return WorkerOutcome(worker=worker, report=report,
                         sent_at=report.started_at + dt.timedelta(seconds=sent_offset_s),
                         received_at=report.started_at + dt.timedelta(seconds=received_offset_s))


def test_clock_skew_is_certain_only_outside_the_round_trip(worker_report):
    on_time = Report.from_dict(worker_report)
    ahead = Report.from_dict(worker_report)  # started 30 s "later" than it can have on the collector's clock
    ahead.started_at = on_time.started_at + dt.timedelta(seconds=30)
    merged = merge_outcomes([_outcome("0", on_time, -0.5, on_time.duration_s + 1),
                             _outcome("1", ahead, -30.5, ahead.duration_s - 29)])
    skew = next(r for r in merged.report.results if r.id == "POD-005")
    assert skew.status is Status.WARN and skew.scope.workers == ("1",)
    assert "worker 1 ahead by at least 2" in skew.message


def test_merge_of_nothing_is_an_input_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["merge", str(tmp_path / "empty")]) == 2
    assert "no reports found" in capsys.readouterr().err
    assert main(["merge", str(tmp_path / "absent")]) == 2


def test_more_than_64_workers_get_one_line_per_step(worker_report, tmp_path, capsys):
    write_worker_reports(worker_report, tmp_path / "run", 70, problems={66: "NODE-005"}, slice_workers=70)
    assert main(["merge", str(tmp_path / "run")]) == 1
    text = capsys.readouterr().out
    assert "1 node: ✗ 1 (66), ! 69 (0-65, 67-69)" in text or "1 node: ✗ 1 (66)" in text
    assert "0123456789" not in text  # no matrix beyond 64 workers


def _with_log_event(document, timestamp, signature, message):
    document["results"].append({
        "id": "LOGS-002", "kind": "check", "step": 4, "title": "libtpu logs show no known TPU failure",
        "status": "FAIL", "severity": "high", "message": message, "remediation": None,
        "evidence": {"signature": signature, "first_timestamp": timestamp},
        "scope": {"workers": [], "hosts": [], "chips": []}, "skip_reason": None, "duration_s": 0.01})
    return document


def test_log_timeline_names_the_worker_that_failed_first(worker_report):
    from tpudoctor.testing.pod_reports import worker_document

    docs = {0: ("2026-11-30T10:00:02.100000Z", "socket-closed", "Lost the connection to a TPU worker"),
            1: ("2026-11-30T10:00:01.900000Z", "socket-closed", "Lost the connection to a TPU worker"),
            2: ("2026-11-30T10:00:01.250000Z", "hbm-oom-compile", "HBM out of memory at compile time")}
    outcomes = [WorkerOutcome(worker=str(w), report=Report.from_dict(_with_log_event(
        worker_document(worker_report, w), *event))) for w, event in docs.items()]
    outcomes.append(WorkerOutcome(worker="3", report=Report.from_dict(worker_document(worker_report, 3))))
    merged = merge_outcomes(outcomes, expected=["0", "1", "2", "3"])
    timeline = next(r for r in merged.report.results if r.id == "POD-006")
    assert timeline.status is Status.FAIL and timeline.scope.workers == ("2",)
    assert [e["worker"] for e in timeline.evidence["timeline"]] == ["2", "1", "0"]
    assert timeline.message.startswith("worker 2 logged the first fatal event at 2026-11-30T10:00:01.250000Z")
    assert "2 other worker(s) failed after it (0, 1)" in timeline.message
    logs = [r for r in merged.report.results if r.id == "LOGS-002"]  # one result per cause, the cause first
    assert [(r.scope.workers, r.evidence["signature"]) for r in logs] == [
        (("2",), "hbm-oom-compile"), (("0", "1"), "socket-closed")]
    assert merged.report.summary.root_cause == "POD-006"  # ranked above the LOGS-002 results it explains


def test_worker_number_for_the_file_name_comes_from_the_metadata_server(fake_metadata, tmp_path):
    from tpudoctor.testing.fake_metadata import tpu_vm_metadata

    fake_metadata.tree = tpu_vm_metadata("p", "us-central2-b", "my-pod", "v4-32", worker=2, workers=4)
    # Step 3 alone never reads the metadata server; the file name still gets this VM's worker number.
    main(["check", "RUNTIME-001", "--format", "json", "-o", str(tmp_path / "{worker}.json")])
    assert json.loads((tmp_path / "2.json").read_text())["results"][0]["id"] == "RUNTIME-001"


OOM_TRACEBACK = [
    "I1130 10:20:58.100000 140 train.py:88] step 1200, loss 2.31",
    "I1130 10:21:07.400000 140 train.py:88] compiling train_step for a batch of 512",
    "Traceback (most recent call last):",
    '  File "/home/user/train.py", line 141, in <module>',
    "    state, metrics = train_step(state, batch)",
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory "
    "in memory space hbm. Used 20.54G of 15.48G hbm. Exceeded hbm capacity by 5.06G.",
]
SOCKET_CLOSED_AT_11 = [
    "I1130 10:59:58.000000 140 train.py:88] step 1200, loss 2.30",
    "E1130 11:00:00.118000 141 pjrt_client.cc:512] Unavailable: Socket closed",
]


def test_different_causes_on_different_workers_stay_apart_and_the_earliest_leads(gcp_env, tmp_path, capsys):
    """Worker 3 runs out of HBM at 10:21; worker 1 loses its connection at 11:00 (a consequence). The merge
    must not fold them into one 'Lost the connection ... FAIL on 2 workers (1, 3)' with the connection fix for both."""
    logs = {"0": ["I1130 10:00:00.000000 140 train.py:88] step 1, loss 9.1"], "1": SOCKET_CLOSED_AT_11,
            "2": ["I1130 10:00:00.000000 140 train.py:88] step 1, loss 9.0"], "3": OOM_TRACEBACK}
    for worker, lines in logs.items():
        log = tmp_path / f"train-{worker}.log"
        log.write_text("\n".join(lines) + "\n")
        assert main(["check", "LOGS-001", "--log-file", str(log), "--worker", worker, "--format", "json",
                     "-o", str(tmp_path / "run" / f"{worker}.json")]) in (0, 1)
    assert main(["merge", str(tmp_path / "run"), "--format", "json", "-o", str(tmp_path / "m.json")]) == 1
    merged = json.loads((tmp_path / "m.json").read_text())
    logs_results = [r for r in merged["results"] if r["id"] == "LOGS-001"]
    assert [(r["scope"]["workers"], r["evidence"]["signature"]) for r in logs_results if r["status"] == "FAIL"] == [
        (["3"], "hbm-oom-compile"), (["1"], "socket-closed")]
    oom, lost = logs_results[0], logs_results[1]
    assert oom["message"].startswith("FAIL on 1 of 4 workers (3): HBM out of memory at compile time")
    assert oom["remediation"]["text"].startswith("On worker 3: Reduce the per-device footprint")
    assert lost["message"].startswith("FAIL on 1 of 4 workers (1): Lost the connection")
    assert lost["remediation"]["text"].startswith("On worker 1: ")
    timeline = next(r for r in merged["results"] if r["id"] == "POD-006")
    assert timeline["scope"]["workers"] == ["3"] and timeline["message"].startswith(
        "worker 3 logged the fatal event the others follow from (LOGS-001: HBM out of memory")
    assert merged["summary"]["root_cause"] in ("LOGS-001", "POD-006")
    root = next(r for r in merged["results"] if r["id"] == merged["summary"]["root_cause"])
    assert root["scope"]["workers"] == ["3"]
    # JUnit: each cause's testcase names its own workers.
    assert main(["merge", str(tmp_path / "run"), "--format", "junit", "-o", str(tmp_path / "m.xml")]) == 1
    cases = [c for c in ET.parse(tmp_path / "m.xml").getroot().iter("testcase")
             if c.get("name", "").startswith("LOGS-001") and c.find("failure") is not None][:2]
    assert [c.find("properties/property[@name='scope.workers']").get("value") for c in cases] == ["3", "1"]
    # Every format leads with worker 3's cause.
    assert main(["merge", str(tmp_path / "run")]) == 1
    text = capsys.readouterr().out
    cause = text.split("Root cause", 1)[1]
    assert cause.index("HBM out of memory") < cause.index("Lost the connection")


def test_slice_checks_are_registered_listed_and_never_run_on_one_machine(capsys):
    from tpudoctor.families import load_registry

    registry = load_registry()
    slice_ids = sorted(c.id for c in registry.check_classes() if c.runs_on == "slice")
    assert slice_ids == [f"POD-00{i}" for i in range(1, 9)]
    assert main(["list-checks", "--format", "json"]) == 0
    listed = {row["id"]: row for row in json.loads(capsys.readouterr().out)["checks"]}
    assert listed["POD-004"]["runs_on"] == "slice" and listed["NODE-001"]["runs_on"] == "worker"
    assert main(["check", "POD-003"]) == 2  # a slice check has nothing to judge on one machine
    assert "no checks selected" in capsys.readouterr().err


def test_a_crashing_slice_check_is_an_error_result_and_the_merge_goes_on(worker_report):
    from tpudoctor.check import Check
    from tpudoctor.families import load_registry
    from tpudoctor.findings import Step

    class Crashes(Check):
        """Divides by the number of workers that hung."""

        id = "POD-099"
        title = "crashes"
        step = Step.NODE
        runs_on = "slice"
        facts = ("slice.outcomes",)

        def evaluate(self, facts):
            return self.passed(str(1 / len([o for o in facts.require("slice.outcomes").values() if o.problem])))

    registry = load_registry([("test", [Crashes])], plugins=False)
    report = Report.from_dict(worker_report)
    merged = merge_outcomes([WorkerOutcome("0", report=report), WorkerOutcome("1", report=report)],
                            expected=["0", "1"], registry=registry)
    results = {r.id: r for r in merged.report.results}
    assert results["POD-099"].status is Status.ERROR and "ZeroDivisionError" in results["POD-099"].message
    assert results["POD-003"].status is Status.PASS and results["POD-004"].status is Status.PASS
    assert "POD-001" not in results and "POD-007" not in results  # read from files, every report readable


def test_a_merge_imports_the_slice_checks_only(worker_report, tmp_path):
    """A merge runs the slice checks: the worker checks and their providers (client libraries) stay unimported."""
    import ast
    import subprocess
    import sys

    write_worker_reports(worker_report, tmp_path / "run", 4, problems={2: "NODE-005"}, slice_workers=4)
    probe = ("import sys; from tpudoctor.cli import main; code = main(['merge', sys.argv[1], '--format', 'json', "
             "'-o', sys.argv[2]]); loaded = [m for m in sys.modules if m.startswith(('tpudoctor.checks.', "
             "'google.cloud'))]; print(sorted(loaded)); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "run"), str(tmp_path / "merged.json")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    loaded = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert loaded and all(m.startswith("tpudoctor.checks.slice") for m in loaded), loaded
    doc = json.loads((tmp_path / "merged.json").read_text())
    assert {r["id"] for r in doc["results"]} >= {"NODE-005", "POD-003"}


# ---- the hostile probe of 2026-12-04 (N25, N26): workers outside --workers, missing ones, foreign reports
_DATA = TESTS
_MAXTEXT_LOG = _DATA / "fixtures" / "goodput" / "maxtext_restart.log"
_OOM_LOG = _DATA / "data" / "memory" / "easydel_166_compile_hbm_report.log"


@pytest.fixture(scope="module")
def probe_reports(tmp_path_factory):
    """The probe's mg/w0.json and mg/w1.json (check step 4 on two real logs, workers 0 and 1) and a goodput
    report (another kind), each written by tpudoctor itself."""
    folder = tmp_path_factory.mktemp("mg")
    for worker, log in (("0", _MAXTEXT_LOG), ("1", _OOM_LOG)):
        main(["check", "--step", "4", "--log-file", str(log), "--worker", worker, "--format", "json",
              "-o", str(folder / f"w{worker}.json"), "--exit-zero"])
    assert main(["goodput", str(_MAXTEXT_LOG), "--format", "json", "-o", str(folder / "goodput.json")]) == 0
    return folder


def test_a_worker_outside_workers_is_named_not_counted(probe_reports, capsys):
    main(["merge", str(probe_reports / "w0.json"), str(probe_reports / "w1.json"), "--workers", "0,0"])
    head = next(line for line in capsys.readouterr().out.splitlines() if "Pod slice" in line)
    assert "2 of 1" not in head
    assert "1 of 1 workers reported, and worker 1 outside the expected workers (0)" in head


def test_the_merged_report_s_host_counts_only_the_expected_workers(probe_reports, tmp_path):
    """The header said "host 2 of 2 workers" for `--workers 0,0` with a report from worker 1 as well."""
    out = tmp_path / "merged.json"
    main(["merge", str(probe_reports / "w0.json"), str(probe_reports / "w1.json"), "--workers", "0,0",
          "--format", "json", "-o", str(out)])
    assert __import__("json").loads(out.read_text())["host"] == "1 of 1 workers, and 1 outside the expected workers"


def test_missing_workers_are_drawn_as_unknown(probe_reports, capsys):
    main(["merge", str(probe_reports / "w0.json"), str(probe_reports / "w1.json"), "--workers", "0-3"])
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    header = next(i for i, line in enumerate(lines) if line.startswith("worker "))
    assert lines[header].split() == ["worker", "0123"]
    assert lines[header + 1].split()[-1][2:] == "??"  # workers 2 and 3 sent nothing (0 and 1's cells depend on the logs)


def test_a_report_of_another_kind_is_no_worker(probe_reports, tmp_path, capsys):
    out = tmp_path / "merged.json"
    code = main(["merge", str(probe_reports / "goodput.json"), str(probe_reports / "w0.json"), "--format", "json",
                 "-o", str(out)])
    doc = json.loads(out.read_text())
    assert set(doc["workers"]) == {"0"} and doc["slice"]["workers_reported"] == ["0"]
    assert "goodput.json is a tpudoctor goodput report, not a check report" in doc["slice"]["left_out"][0]
    assert "left out" in capsys.readouterr().err
    assert code in (0, 1) and not any("goodput" in (r.get("scope") or {}).get("workers", []) for r in doc["results"])
    assert main(["merge", str(probe_reports / "goodput.json")]) == 2
    assert "is a tpudoctor goodput report, not a check report" in capsys.readouterr().err


@pytest.mark.parametrize(("make", "said"), [("fifo", "is a FIFO (named pipe), not a report file"),
                                            ("/dev/null", "is a character device, not a report file")])
def test_a_fifo_or_a_device_is_named_for_what_it_is(make, said, tmp_path, capsys):
    import os

    path = "/dev/null"
    if make == "fifo":
        path = str(tmp_path / "fifo.json")
        os.mkfifo(path)
    assert main(["merge", path]) == 2
    err = capsys.readouterr().err
    assert said in err and "does not exist" not in err
