"""tpudoctor hang --tpu NAME --workers / --all-workers: every worker runs the real ``tpudoctor hang --format
json`` through the gcloud stand-in (tests/pod_slice_bin), here on real captures of the hung JAX job
(``--replay``, tests/data/hang): 64 JAX processes do not fit a test machine, their py-spy dumps do."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from paths import TESTS
from pod_slice import build_slice

from tpudoctor.cli import main
from tpudoctor.hang.capture import CAPTURE_FILE
from tpudoctor.schema import validate
from tpudoctor.testing.fake_tpu_api import make_node

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]
pytestmark = pytest.mark.slow
CAPTURES = TESTS / "data" / "hang"
ZONE = "us-central2-b"


def _pids(capture: str) -> tuple[int, list[int]]:
    """(the stuck process, the waiting ones) of a real capture."""
    from tpudoctor.families import load_rules
    from tpudoctor.hang.capture import read_dump_dir
    from tpudoctor.hang.classify import process_state

    rules = list(load_rules("hang-rules").values())
    states = {c.pid: process_state(c, rules) for c in read_dump_dir(str(CAPTURES / capture)).captures}
    stuck = [pid for pid, state in states.items() if state.category != "device"]
    assert len(stuck) == 1
    return stuck[0], sorted(pid for pid in states if pid != stuck[0])


def _give(worker_home: Path, capture: str, pids: list[int]) -> None:
    """The worker's ``dumps`` folder: the capture's run file and these processes."""
    dumps = worker_home / "dumps"
    dumps.mkdir(parents=True)
    shutil.copy(CAPTURES / capture / CAPTURE_FILE, dumps / CAPTURE_FILE)
    for pid in pids:
        shutil.copy(CAPTURES / capture / f"pid-{pid}.json", dumps / f"pid-{pid}.json")


def _use(monkeypatch, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def test_64_workers_name_the_one_the_others_wait_for(tmp_path, monkeypatch):
    stuck, waiting = _pids("data_loader")
    root = tmp_path / "slice"
    _use(monkeypatch, build_slice(root, 64, unreachable={9}, no_tpudoctor={12}))
    for i in range(64):
        _give(root / f"worker-{i}", "data_loader", [stuck] if i == 5 else [waiting[i % len(waiting)]])
    out = tmp_path / "merged.json"
    started = time.monotonic()
    code = main(["hang", "--tpu", "pod", "--zone", ZONE, "--workers", "0-63", "--replay", "dumps", "--interval", "0s",
                 "--worker-timeout", "240s", "--format", "json", "-o", str(out), "--dump-dir", str(tmp_path / "docs")])
    elapsed = time.monotonic() - started
    report = json.loads(out.read_text())
    validate(report, "hang_report")
    assert code == 1 and report["verdict"] == "hung"

    cause = report["root_cause"]
    assert cause["category"] == "data" and cause["members"] == [{"worker": "5", "pid": stuck}]
    assert cause["frame"]["function"] == "read_shard"
    assert cause["waiting"] == 61 and "9" not in cause["waiting_workers"] and "5" not in cause["waiting_workers"]
    assert cause["headline"].startswith(f"worker 5 (pid {stuck}) stands in its data loader at read_shard")
    assert "61 other workers wait for it" in cause["headline"]

    findings = {f["id"]: f for f in report["findings"]}
    assert findings["HANG-001"]["scope"]["workers"] == ["5"]
    assert findings["POD-001"]["scope"]["workers"] == ["9"] and "failed" in findings["POD-001"]["message"]
    assert findings["POD-002"]["scope"]["workers"] == ["12"]
    assert report["workers"]["9"]["status"] == "no_report" and report["workers"]["5"]["status"] == "reported"

    decision = report["decision"]
    assert decision["action"] == "RESTART"
    assert any("--worker=all" in c and "pkill -KILL -f" in c for c in decision["commands"])
    assert any("--worker=5" in c and "py-spy dump --pid" in c for c in decision["commands"])
    assert sorted(p.name for p in (tmp_path / "docs").iterdir())[:2] == ["worker-0.json", "worker-1.json"]
    assert report["environment"]["merge_s"] < 5.0, "merging 64 workers' dumps must stay quick"
    assert elapsed < 240


def test_the_text_report_deduplicates_like_py_spy_dump(tmp_path, monkeypatch):
    stuck, waiting = _pids("metrics_lock")
    root = tmp_path / "slice"
    _use(monkeypatch, build_slice(root, 8))
    for i in range(8):
        _give(root / f"worker-{i}", "metrics_lock", [stuck] if i == 6 else [waiting[0]])
    out = tmp_path / "merged.txt"
    code = main(["hang", "--tpu", "pod", "--zone", ZONE, "--workers", "0-7", "--replay", "dumps", "--interval", "0s",
                 "--format", "text", "-o", str(out)])
    text = out.read_text()
    assert code == 1
    assert f"worker 6 (pid {stuck}): waiting for a lock, frozen (the odd one out)" in text
    assert "7 workers: 0-5, 7: waiting for the device, frozen" in text
    assert text.index("worker 6 (pid") < text.index("7 workers:")  # the odd one out first
    assert "Decision: FIX CODE" in text and "holds: with self._lock:" in text


def test_all_workers_from_the_tpu_api_and_a_worker_without_its_process(fake_tpu_api, tmp_path, monkeypatch):
    _stuck, waiting = _pids("data_loader")
    fake_tpu_api.add_node(make_node("p", ZONE, "pod", accelerator_type="v4-32", workers=4))
    root = tmp_path / "slice"
    _use(monkeypatch, build_slice(root, 4))
    for i in range(4):
        _give(root / f"worker-{i}", "data_loader", [] if i == 3 else [waiting[i % len(waiting)]])
    out = tmp_path / "merged.json"
    code = main(["hang", "--tpu", "pod", "--zone", ZONE, "--project", "p", "--all-workers", "--replay", "dumps",
                 "--interval", "0s", "--format", "json", "-o", str(out)])
    report = json.loads(out.read_text())
    assert code == 1
    assert report["workers"]["3"]["status"] == "no_process"
    cause = report["root_cause"]
    assert cause["category"] == "gone" and cause["members"] == [{"worker": "3", "pid": 0}]
    assert cause["waiting"] == 3
    assert report["decision"]["action"] == "RESTART"
    assert any("tpudoctor check --tpu pod" in c and "--workers 3" in c for c in report["decision"]["commands"])


def test_a_worker_that_never_answers_is_bounded_by_the_worker_timeout(tmp_path, monkeypatch):
    stuck, waiting = _pids("checkpoint")
    root = tmp_path / "slice"
    _use(monkeypatch, build_slice(root, 4, hung={2}))
    for i in range(4):
        _give(root / f"worker-{i}", "checkpoint", [stuck] if i == 1 else [waiting[0]])
    out = tmp_path / "merged.json"
    started = time.monotonic()
    code = main(["hang", "--tpu", "pod", "--zone", ZONE, "--workers", "0-3", "--replay", "dumps", "--interval", "0s",
                 "--worker-timeout", "20s", "--format", "json", "-o", str(out)])
    elapsed = time.monotonic() - started
    report = json.loads(out.read_text())
    assert code == 1 and elapsed < 65  # 20 s for the hung worker, the rest for a loaded 2-core machine
    problem = {f["id"]: f for f in report["findings"]}["POD-001"]
    assert problem["scope"]["workers"] == ["2"] and "no answer within 20s" in problem["message"]
    assert report["root_cause"]["members"] == [{"worker": "1", "pid": stuck}]  # the answering workers still tell
    for pid in (root / "hung-pids.txt").read_text().split():  # the stuck session's child died with its group
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
