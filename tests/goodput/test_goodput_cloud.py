"""``tpudoctor goodput --tpu`` / ``--gke-cluster`` through the real google-cloud-logging client against the
loopback fake, and ml-goodput-measurement's recorder entries (in the payload shape its recorder writes)."""

from __future__ import annotations

import datetime as _dt
import json

import pytest

from tpudoctor.cli import main
from tpudoctor.testing.fake_logging import FakeLoggingServer

T0 = _dt.datetime(2024, 8, 13, 10, 0, 0, tzinfo=_dt.timezone.utc)


def at(seconds: float) -> _dt.datetime:
    return T0 + _dt.timedelta(seconds=seconds)


@pytest.fixture
def fake(monkeypatch):
    with FakeLoggingServer(page_size=7) as server:  # small pages: the client pages through
        monkeypatch.setenv("TPUDOCTOR_LOGGING_ENDPOINT", server.endpoint)
        yield server


def seed_job(fake: FakeLoggingServer, *, worker: str = "0", resource=None, lag: float = 0.0) -> None:
    """A MaxText job as Cloud Logging stores it: one entry per line, its own timestamp, no line prefix.
    Start at 0 s, backend up at 60 s, step 0 at 180 s (compilation), steps 1..10 every 10 s, a sync save of
    15 s after step 5, end at 300 s."""
    def add(t: float, text: str) -> None:
        fake.add_entry(text=text, severity="INFO", timestamp=at(t + lag), worker_id=worker, node_id="big-tpu",
                       log_id="tpu.googleapis.com%2Fruntime_monitor", resource=resource)

    add(0, "System Information: Jax Version: 0.4.31")
    add(60, "System Information: Jax Backend: PJRT C API")
    add(180, "completed step: 0, seconds: 120.000, TFLOP/s/device: 1.0, Tokens/s/device: 1.0, loss: 10.0")
    t = 180.0
    for n in range(1, 11):
        t += 10 + (15 if n == 6 else 0)
        if n == 6:
            add(t - 25 + 0.1, "[process=0] [sync] Started save checkpoint @ gs://b/run/checkpoints/5.")
            add(t - 10 + 0.1, "[process=0] [sync] Finished save in 15.00 seconds @ gs://b/run/checkpoints/5")
        add(t, f"completed step: {n}, seconds: 10.000, TFLOP/s/device: 1.0, Tokens/s/device: 1.0, loss: 9.0")
    add(300, "Training finished")


def test_tpu_node_entries_from_every_worker(fake, tmp_path):
    """Worker 0 and worker 1 (2 s behind) are separate streams; the account follows worker 0:
    wall 300 s, init 60, compilation 120 - 10 = 110, productive 10 + 10 x 10 = 110, save 15,
    OTHER 300 - 295 = 5 s after the last step (step 10 at 295 s)."""
    seed_job(fake, worker="0")
    seed_job(fake, worker="1", lag=2.0)
    out = tmp_path / "g.json"
    since = f"{int((_dt.datetime.now(_dt.timezone.utc) - T0).total_seconds()) + 3600}s"
    assert main(["goodput", "--tpu", "big-tpu", "--project", "my-project", "--since", since,
                 "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    g = doc["goodput"]
    assert doc["lead_worker"] == "worker-0" and {w["worker"] for w in doc["workers"]} == {"worker-0", "worker-1"}
    assert g["wall_s"] == 300.0 and g["productive_s"] == 110.0
    assert g["badput"]["TPU_INITIALIZATION"]["seconds"] == 60.0
    assert g["badput"]["PROGRAM_STARTUP"]["seconds"] == 110.0
    assert g["badput"]["UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"]["seconds"] == 15.0
    assert doc["cloud"]["entries"] == 2 * 16
    body = fake.requests[0]["body"]
    assert 'resource.type="tpu_worker"' in body["filter"] and 'resource.labels.node_id="big-tpu"' in body["filter"]
    assert "severity" not in body["filter"]  # step lines are INFO
    assert len(fake.requests) > 2  # paged


def test_gke_workload_pods(fake, tmp_path):
    pod = {"type": "k8s_container", "labels": {"project_id": "my-project", "cluster_name": "tpu-cluster",
                                               "namespace_name": "default", "container_name": "jax-tpu",
                                               "pod_name": "llama-run-slice-job-0-0-x7k2p"}}
    seed_job(fake, resource=pod)
    out = tmp_path / "g.json"
    assert main(["goodput", "--gke-cluster", "tpu-cluster", "--gke-workload", "llama-run", "--project", "my-project",
                 "--since", "100000d", "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["lead_worker"] == "llama-run-slice-job-0-0-x7k2p" and doc["goodput"]["wall_s"] == 300.0
    assert 'resource.labels.pod_name:"llama-run-"' in fake.requests[0]["body"]["filter"]


def recorder_payloads(job: str = "llama-run") -> list[dict]:
    """What ml-goodput-measurement's GoodputRecorder writes (jsonPayload: job_name and one *_time key each,
    POSIX seconds), and its Orbax checkpoint logger's save record."""
    e = lambda **kw: {"job_name": job, **kw}  # noqa: E731
    ts = lambda s: at(s).timestamp()  # noqa: E731
    out = [e(job_start_time=ts(0)), e(tpu_init_start_time=ts(0)), e(tpu_init_end_time=ts(60)),
           e(training_prep_start_time=ts(60)), e(training_prep_end_time=ts(60))]
    t = 60.0
    for n in range(0, 11):
        out.append(e(step_count=n, step_start_time=ts(t)))
        t += 120 if n == 0 else (25 if n == 5 else 10)
    out.append({"job_name": job, "event_type": "save", "step": 5, "directory": "gs://b/run/checkpoints",
                "checkpoint_manager_blocking_duration_secs": 15.0, "checkpointer_blocking_duration_secs": 14.0,
                "wait_for_prev_duration_secs": 0.0, "get_old_steps_duration_secs": 0.0})
    out.append(e(job_end_time=ts(300)))
    return out


def test_recorder_entries_are_read_and_the_accounts_compared(fake, tmp_path):
    """The recorder's account follows ml-goodput-measurement's rules (tests/goodput/test_goodput_oracle.py checks them
    against the library): steps 0..10 start at 60, 180, 190 .. 220, 245 .. 285 s and the job ends at 300 s, so
    the last step counts (15 s); the first interval (120 s) less the mean of the others (105 / 9) is
    PROGRAM_STARTUP 108.33 s; productive = 120 + 105 - 108.33 + 15 - the 15 s save = 116.67 s, and nothing is
    left for OTHER. The log's account (median-based, the time after the last step line as OTHER) agrees on wall
    time, initialisation, the save and steps, and differs on productive time, ETTR and OTHER."""
    seed_job(fake, worker="0")
    for i, payload in enumerate(recorder_payloads()):
        fake.add_entry(json_payload=payload, severity="INFO", timestamp=at(i * 0.001), log_id="goodput",
                       resource={"type": "global", "labels": {"project_id": "my-project"}})
    out = tmp_path / "g.json"
    assert main(["goodput", "--tpu", "big-tpu", "--project", "my-project", "--since", "100000d",
                 "--goodput-job", "llama-run", "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    inst = doc["instrumented"]
    assert inst["entries"] == len(recorder_payloads())
    rows = {r["figure"]: r for r in inst["rows"]}
    assert rows["wall_s"]["recorder"] == 300.0 and rows["wall_s"]["agree"] is True
    assert rows["TPU_INITIALIZATION %"]["agree"] is True
    assert rows["UNPRODUCTIVE_CHECKPOINT_SAVE_TIME %"]["recorder"] == 5.0
    assert rows["steps"]["log"] == rows["steps"]["recorder"] == 11
    account = inst["account"]
    assert account["productive_s"] == 116.667 and account["badput"]["PROGRAM_STARTUP"]["seconds"] == 108.333
    assert account["badput"]["OTHER"]["seconds"] == 0.0 and account["max_productive_step"] == 10
    assert inst["differ"] == ["productive_s", "ettr", "OTHER %"]
    recorder_filter = next(r["body"]["filter"] for r in fake.requests if "jsonPayload.job_name" in r["body"]["filter"])
    assert 'logName="projects/my-project/logs/goodput"' in recorder_filter and "severity=INFO" in recorder_filter


def test_no_recorder_entries_is_said(fake, tmp_path):
    seed_job(fake)
    out = tmp_path / "g.json"
    assert main(["goodput", "--tpu", "big-tpu", "--project", "my-project", "--since", "100000d",
                 "--goodput-job", "other-job", "--format", "json", "-o", str(out)]) == 0
    assert "did not use ml-goodput-measurement's recorder" in json.loads(out.read_text())["instrumented"]["lines"][0]


def test_permission_denied_is_a_clear_error(fake, capsys):
    fake.fail_with = (403, "Permission 'logging.logEntries.list' denied on resource")
    assert main(["goodput", "--tpu", "big-tpu", "--project", "my-project"]) == 2
    err = capsys.readouterr().err
    assert "Cloud Logging did not give the job's log entries" in err and "Traceback" not in err


def test_cloud_flags_are_checked(capsys, tmp_path):
    assert main(["goodput", "--tpu", "x"]) == 2
    assert "needs a project" in capsys.readouterr().err
    log = tmp_path / "a.log"
    log.write_text("x\n")
    assert main(["goodput", str(log), "--tpu", "x", "--project", "p"]) == 2
    assert main(["goodput", "--gke-cluster", "c", "--project", "p"]) == 2
