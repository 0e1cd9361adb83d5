"""tpudoctor hang on a real hung JAX job: four CPU processes with a gloo all-reduce every step
(``tpudoctor.testing.hung_job``), one job shared by the module and made to hang in turn. Every stack is
py-spy's, taken from the live processes; nothing is canned."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from tpudoctor.cli import main
from tpudoctor.schema import validate

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hung_jax_job"),
              pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and traces with py-spy (Linux)")]
INTERVAL = "1s"


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    from tpudoctor.testing.hung_job import HungJob

    with HungJob(tmp_path_factory.mktemp("hung-job"), processes=4) as running:
        yield running
    assert all(p.poll() is not None for p in running.procs)  # nothing left behind


@pytest.fixture
def moving(job):
    """The job moves at the start and at the end of each test."""
    job.wait_for_steps(2)
    yield job
    job.wait_for_steps(2)


def pids(job) -> list[str]:
    return [a for p in job.pids for a in ("--pid", str(p))]


def hang(tmp_path, job, *argv: str) -> tuple[int, dict]:
    out = tmp_path / "hang.json"
    code = main(["hang", "--interval", INTERVAL, "--format", "json", "-o", str(out), *pids(job), *argv])
    report = json.loads(out.read_text())
    validate(report, "hang_report")
    return code, report


def test_a_job_that_moves_passes(moving, tmp_path):
    code, report = hang(tmp_path, moving)
    assert code == 0
    assert report["verdict"] == "progressing" and report["confidence"] == "high"
    assert report["steps_per_s"] > 0.5
    assert report["decision"] is None and report["root_cause"] is None
    assert {f["id"]: f["status"] for f in report["findings"]}["HANG-001"] == "PASS"
    assert not any(g["odd_one_out"] for g in report["groups"])


def test_a_stalled_data_loader_is_named_first_with_its_frame(moving, tmp_path):
    stuck = moving.pids[2]
    with moving.data_loader_stalled(2):
        done = subprocess.run([sys.executable, "-m", "tpudoctor", "hang", "--interval", INTERVAL, *pids(moving)],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    verdict = lines[2]  # after the header and the summary: the verdict names the process and its frame
    assert verdict.startswith("[✗] HUNG")
    assert f"pid {stuck} stands in its data loader at read_shard (" in verdict
    assert "input_pipeline.py:50)" in verdict and "3 other processes wait for it" in verdict
    assert "Decision: RESTART" in done.stdout
    assert f"kill -KILL {' '.join(map(str, moving.pids))}" in done.stdout


def test_a_stalled_data_loader_in_json(moving, tmp_path):
    stuck = moving.pids[2]
    with moving.data_loader_stalled(2):
        code, report = hang(tmp_path, moving)
    assert code == 1 and report["verdict"] == "hung" and report["confidence"] == "high"
    cause = report["root_cause"]
    assert cause["category"] == "data" and cause["members"] == [{"worker": None, "pid": stuck}]
    assert cause["frame"]["function"] == "read_shard" and cause["frame"]["code"] == 'with open(path, "rb") as handle:'
    assert cause["waiting"] == 3 and cause["stalled_since"] is not None
    odd = [g for g in report["groups"] if g["odd_one_out"]]
    assert [m["pid"] for g in odd for m in g["members"]] == [stuck]
    waiting = [g for g in report["groups"] if not g["odd_one_out"]]
    assert [g["category"] for g in waiting] == ["device"] and len(waiting[0]["members"]) == 3
    assert report["decision"]["action"] == "RESTART"


def test_a_stalled_checkpoint_write(moving, tmp_path):
    stuck = moving.pids[1]
    with moving.checkpoint_stalled(1):
        code, report = hang(tmp_path, moving)
    assert code == 1
    cause = report["root_cause"]
    assert cause["category"] == "checkpoint" and [m["pid"] for m in cause["members"]] == [stuck]
    assert cause["frame"]["function"] == "write_atomically"
    assert report["decision"]["action"] == "RESTART" and "wait_at_barrier" in report["decision"]["text"]
    stuck_state = next(p for p in report["processes"] if p["pid"] == stuck)
    others = [p["last_step"] for p in report["processes"] if p["pid"] != stuck]
    assert stuck_state["last_step"] < min(others)  # it saves after its step; the others did one more


def test_a_lock_held_across_blocking_io(moving, tmp_path):
    stuck = moving.pids[3]
    with moving.metrics_lock_stalled(3):
        code, report = hang(tmp_path, moving)
    assert code == 1
    cause = report["root_cause"]
    assert cause["category"] == "lock" and [m["pid"] for m in cause["members"]] == [stuck]
    assert cause["frame"]["function"] == "MetricsWriter.record" and cause["frame"]["code"] == "with self._lock:"
    assert "held by thread 'metrics-writer'" in cause["detail"] and "MetricsWriter.flush" in cause["detail"]
    decision = report["decision"]
    assert decision["action"] == "FIX CODE" and "MetricsWriter.record" in decision["text"]


def test_device_work_that_never_finishes_with_no_odd_one_out_is_replace_host(moving, tmp_path):
    with moving.device_step_stalled(0, seconds=20):
        code, report = hang(tmp_path, moving, "--native", "never", "--tpu", "my-v5p", "--zone", "us-east5-a")
    assert code == 1 and report["verdict"] == "hung", (report["verdict"], report["verdict_why"], report["groups"])
    assert [g["category"] for g in report["groups"]] == ["device"] and not report["groups"][0]["odd_one_out"]
    cause = report["root_cause"]
    assert cause["category"] == "no_odd_one_out" and cause["waiting"] == 4
    assert cause["frame"]["function"] == "train_step"
    decision = report["decision"]
    assert decision["action"] == "REPLACE HOST" and decision["confidence"] == "medium"
    assert any(c.startswith("gcloud compute instances report-host-as-faulty my-v5p --zone us-east5-a") for c in
               decision["commands"])


def test_dump_dir_keeps_py_spy_output_and_replay_reaches_the_same_root_cause(moving, tmp_path):
    dumps = tmp_path / "dumps"
    with moving.data_loader_stalled(0):
        code, live = hang(tmp_path, moving, "--dump-dir", str(dumps))
    for pid in moving.pids:
        raw = json.loads((dumps / f"pid-{pid}-sample-2.pyspy.json").read_text())
        assert raw[0]["thread_name"] and raw[0]["frames"][0]["name"]  # py-spy's JSON, untouched
    out = tmp_path / "replay.json"
    assert main(["hang", "--replay", str(dumps), "--format", "json", "-o", str(out)]) == 1
    replayed = json.loads(out.read_text())
    assert replayed["root_cause"]["headline"] == live["root_cause"]["headline"]
    assert replayed["decision"]["action"] == live["decision"]["action"] == "RESTART"


def test_every_format_renders_the_hung_job(moving, tmp_path):
    dumps = tmp_path / "dumps"
    with moving.metrics_lock_stalled(1):
        hang(tmp_path, moving, "--dump-dir", str(dumps))
    outputs = {}
    for fmt in ("markdown", "html", "junit"):  # the same capture, read back
        out = tmp_path / f"hang.{fmt}"
        assert main(["hang", "--replay", str(dumps), "--format", fmt, "-o", str(out)]) == 1
        outputs[fmt] = out.read_text()
    assert "[✗] HUNG (confidence" in outputs["markdown"] and "## Decision: FIX CODE" in outputs["markdown"]
    assert "MetricsWriter.record" in outputs["html"] and "<h2>Decision: FIX CODE" in outputs["html"]
    import xml.etree.ElementTree as ET

    suite = ET.fromstring(outputs["junit"]).find("testsuite")
    failure = suite.find("testcase/failure")
    assert failure is not None and "waits for a lock" in failure.get("message")
    assert {p.get("name"): p.get("value") for p in suite.find("properties")}["decision"] == "FIX CODE"


def test_the_json_schema_rejects_a_wrong_verdict(moving, tmp_path):
    _code, report = hang(tmp_path, moving)
    report["verdict"] = "stuck"
    with pytest.raises(jsonschema.ValidationError):
        validate(report, "hang_report")
