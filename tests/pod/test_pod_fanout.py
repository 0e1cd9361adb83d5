"""check --all-workers / --workers: every worker runs the real tpudoctor check through the gcloud stand-in."""

from __future__ import annotations

import json
import os
import time

import pytest
from pod_slice import build_slice

from tpudoctor.cli import main
from tpudoctor.findings import Report
from tpudoctor.rendering import render
from tpudoctor.testing.fake_tpu_api import make_node

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

ZONE = "us-central2-b"
OOM = ("E1130 10:00:00.500000 42 tpu_runtime.cc:9] RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out "
       "of memory in memory space hbm. Used 20.54G of 15.48G hbm. Exceeded hbm capacity by 5.06G.")
SOCKET_CLOSED = "E1130 10:00:0{s}.000000 42 rpc.cc:9] Unavailable: Socket closed"


def _use(monkeypatch, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def _results(doc):
    return {r["id"]: r for r in doc["results"]}


def test_sixteen_workers_with_problems_on_3_and_7(fake_tpu_api, monkeypatch, tmp_path):
    fake_tpu_api.add_node(make_node("p", ZONE, "pod", accelerator_type="v4-128", workers=16))
    _use(monkeypatch, build_slice(
        tmp_path / "slice", 16, chips_missing={3: 1, 7: 2},
        versions={11: {"jax": "0.4.30", "jaxlib": "0.4.30"}}, slow={2: 1.0},
        banner={4: "Welcome to Ubuntu 22.04.4 LTS\n{ this line is not the report\n"},
        logs={5: [OOM], 0: [SOCKET_CLOSED.format(s=2)], 1: [SOCKET_CLOSED.format(s=3)],
              6: [SOCKET_CLOSED.format(s=1)]}))
    out = tmp_path / "merged.json"
    code = main(["check", "--tpu", "pod", "--zone", ZONE, "--project", "p", "--all-workers", "--step", "1",
                 "--step", "4", "--worker-timeout", "120s", "--internal-ip", "--ssh-flag=-o ConnectTimeout=5",
                 "--format", "json", "-o", str(out)])
    doc = json.loads(out.read_text())
    results = _results(doc)
    assert code == 1  # the worst result is a FAIL

    # The top result names the two workers with missing chips.
    assert doc["summary"]["root_cause"] == "NODE-004"
    chips = results["NODE-004"]
    assert chips["scope"]["workers"] == ["3", "7"]
    assert chips["message"].startswith("FAIL on 2 of 16 workers (3, 7): 3 of 4 v4 chips visible")
    assert chips["evidence"]["worker_messages"]["7"].startswith("2 of 4 v4 chips visible")

    assert doc["slice"]["workers_reported"] == [str(i) for i in range(16)]

    # A login banner before the report does not hide it.
    assert doc["workers"]["4"]["report"]["target"]["worker"] == "4"

    # Another jax on worker 11.
    versions = results["POD-004"]
    assert versions["status"] == "FAIL" and versions["scope"]["workers"] == ["11"]
    assert "jax 0.4.35 on 15 of 16 workers, 0.4.30 on 11" in versions["message"]
    assert any("--worker=11" in c and "pip install jax==0.4.35" in c for c in versions["remediation"]["commands"])

    # Worker 5 crashed first; the others lost their connection after it.
    timeline = results["POD-006"]
    assert timeline["status"] == "FAIL" and timeline["scope"]["workers"] == ["5"]
    assert timeline["evidence"]["root_cause_worker"] == "5"
    assert [e["worker"] for e in timeline["evidence"]["timeline"]] == ["5", "6", "0", "1"]
    assert "worker 5 logged the first fatal event" in timeline["message"]

    assert results["POD-001"]["status"] == "PASS"  # every worker answered, the slow one too
    assert results["POD-005"]["status"] == "PASS"  # same machine, same clock

    # gcloud got each worker's own call with the flags passed through.
    calls = [json.loads(line)["argv"] for line in (tmp_path / "slice" / "gcloud-calls.jsonl").read_text().splitlines()]
    assert sorted(a[a.index("--zone") - 1] for a in calls) == ["pod"] * 16
    assert sorted(next(x for x in a if x.startswith("--worker=")) for a in calls) == sorted(
        f"--worker={i}" for i in range(16))
    assert all("--internal-ip" in a and "--ssh-flag=-o ConnectTimeout=5" in a for a in calls)

    # Every format carries the scope; text has the worker x step matrix.
    text = render(doc, "text")
    assert "0123456789012345" in text
    node_row = next(line.strip() for line in text.splitlines() if line.strip().startswith("1 node"))
    assert node_row.split()[-1] == "!!!✗!!!✗!!!!!!!!"
    assert "FAIL on 2 of 16 workers (3, 7)" in text
    assert "FAIL on 2 of 16 workers (3, 7)" in render(doc, "markdown")
    junit = render(doc, "junit")
    assert 'name="scope.workers" value="3,7"' in junit and 'name="tpudoctor check worker 7"' in junit
    assert Report.from_dict(doc).summary.root_cause == "NODE-004"
    page = render(doc, "html")
    assert "1 node " in page and "FAIL on 2 of 16 workers (3, 7)" in page


def test_workers_without_tpudoctor_or_ssh_are_results_of_their_own(fake_tpu_api, monkeypatch, tmp_path):
    fake_tpu_api.add_node(make_node("p", ZONE, "pod", accelerator_type="v4-32", workers=4))
    _use(monkeypatch, build_slice(tmp_path / "slice", 4, no_tpudoctor={1}, unreachable={3}))
    out = tmp_path / "merged.json"
    code = main(["check", "--tpu", "pod", "--zone", ZONE, "--project", "p", "--all-workers", "NODE-005",
                 "--worker-timeout", "60s", "--format", "json", "-o", str(out)])
    doc = json.loads(out.read_text())
    assert code == 1
    missing = _results(doc)["POD-002"]
    assert missing["status"] == "FAIL" and missing["scope"]["workers"] == ["1"]
    assert missing["evidence"]["exit_code"] == 127 and "command not found" in missing["evidence"]["stderr_tail"]
    assert missing["remediation"]["commands"] == [
        "gcloud compute tpus tpu-vm ssh pod --zone us-central2-b --project p --worker=all --quiet "
        "--command 'pip install tpudoctor'"]
    assert doc["workers"]["1"] == {"status": "no_report", "source": "gcloud ssh worker 1",
                                   "received_at": doc["workers"]["1"]["received_at"], "report": None}
    unreachable = _results(doc)["POD-001"]
    assert unreachable["status"] == "FAIL" and unreachable["scope"]["workers"] == ["3"]
    assert unreachable["message"].endswith("port 22: Connection timed out")
    assert "--tunnel-through-iap" in unreachable["remediation"]["commands"][0]
    assert doc["slice"]["workers_reported"] == ["0", "2"]  # the rest still report
    assert _results(doc)["NODE-005"]["message"] == "no process holds the TPU (all 2 reporting workers)"


def test_sixty_four_workers_two_hung_arrive_within_the_timeout(gcp_env, monkeypatch, tmp_path):
    # Worker 0 runs the check for real; the other 61 healthy workers give its answer to the same command, so the
    # timeout bounds the fan-out and not 62 Python start-ups on two busy test cores (that overran 45 s in CI).
    _use(monkeypatch, build_slice(tmp_path / "slice", 64, hung={17, 50}, replay_from=0))
    out = tmp_path / "merged.json"
    timeout_s = 20
    started = time.monotonic()
    code = main(["check", "--tpu", "pod", "--zone", ZONE, "--workers", "0-63", "NODE-005",
                 "--worker-timeout", f"{timeout_s}s", "--format", "json", "-o", str(out)])
    elapsed = time.monotonic() - started
    doc = json.loads(out.read_text())
    # the two hung workers cost one timeout side by side, not one each
    assert elapsed < 2 * timeout_s, elapsed
    assert code == 1
    answered = _results(doc)["POD-001"]
    assert answered["status"] == "FAIL" and answered["scope"]["workers"] == ["17", "50"]
    assert answered["message"].startswith("FAIL on 2 of 64 workers (17, 50): no answer within 20s")
    assert len(doc["slice"]["workers_reported"]) == 62
    assert _results(doc)["NODE-005"]["message"] == "no process holds the TPU (all 62 reporting workers)"
    # The hung workers' process groups were killed, the ssh-like child included.
    pids = [int(p) for p in (tmp_path / "slice" / "hung-pids.txt").read_text().split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 5
    while any(os.path.exists(f"/proc/{p}") and "Z" not in _state(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if os.path.exists(f"/proc/{p}") and "Z" not in _state(p)]
    text = render(doc, "text")
    assert "1 node" in text and "✗" in text


def _state(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_healthy_slice_exit_code_follows_the_worst_result(fake_tpu_api, monkeypatch, tmp_path):
    fake_tpu_api.add_node(make_node("p", ZONE, "pod", accelerator_type="v4-16", workers=2))
    _use(monkeypatch, build_slice(tmp_path / "slice", 2))
    argv = ["check", "--tpu", "pod", "--zone", ZONE, "--project", "p", "--all-workers", "NODE-004", "NODE-006",
            "--worker-timeout", "60s", "--format", "json", "-o", str(tmp_path / "m.json")]
    assert main(argv) == 0  # NODE-006 warns (idle TPU) on both: below the fail level
    idle = _results(json.loads((tmp_path / "m.json").read_text()))["NODE-006"]
    assert idle["status"] == "WARN" and idle["message"].startswith("WARN on all 2 workers: ")
    assert main(argv + ["--fail-on", "warn"]) == 1


def test_fanout_needs_gcloud_and_a_zone(gcp_env, monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["check", "--tpu", "pod", "--zone", ZONE, "--workers", "0-1"]) == 2
    assert "gcloud is not on PATH" in capsys.readouterr().err
    assert main(["check", "--tpu", "pod", "--workers", "0-1"]) == 2
    assert main(["check", "--tpu", "pod", "--zone", ZONE, "--workers", "3-1"]) == 2


@pytest.mark.parametrize("spec,expected", [("0,3-5", ["0", "3", "4", "5"]), ("7", ["7"]), ("2,1,2", ["1", "2"])])
def test_worker_spec(spec, expected):
    from tpudoctor.pod.worker_ids import parse_worker_spec

    assert parse_worker_spec(spec) == expected


@pytest.mark.parametrize("extra,words", [
    (["--log-file", "-"], "cannot go to every worker"),
    (["-o", "out/{worker}.json"], "one merged report"),
])
def test_fanout_refuses_what_cannot_apply_to_every_worker(gcp_env, monkeypatch, capsys, tmp_path, extra, words):
    _use(monkeypatch, build_slice(tmp_path / "slice", 1))
    assert main(["check", "--tpu", "pod", "--zone", ZONE, "--workers", "0", *extra]) == 2
    assert words in capsys.readouterr().err


def test_all_workers_needs_a_project(gcp_env, monkeypatch, capsys, tmp_path):
    _use(monkeypatch, build_slice(tmp_path / "slice", 1))
    assert main(["check", "--tpu", "pod", "--zone", ZONE, "--all-workers"]) == 2
    assert "needs --project" in capsys.readouterr().err


def test_worker_lists_read_like_a_person_writes_them():
    from tpudoctor.pod.worker_ids import describe_workers

    assert describe_workers(["7", "3"]) == "3, 7"
    assert describe_workers(["0", "1"]) == "0, 1"
    assert describe_workers([str(i) for i in range(64) if i not in (17, 50)]) == "0-16, 18-49, 51-63"
    assert describe_workers(["pod-b", "pod-a", "2"]) == "2, pod-a, pod-b"
