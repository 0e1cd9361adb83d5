"""POD-008: the worker whose log has templates its peers' lack, from reports `check --worker N --log-file` wrote."""

from __future__ import annotations

import json
from pathlib import Path

from tpudoctor.cli import main

LOGS = Path(__file__).parent / "data" / "logs"


def _worker_reports(tmp_path: Path, logs: dict[str, str]) -> Path:
    folder = tmp_path / "run"
    for worker, log in logs.items():
        code = main(["check", "--step", "4", "--log-file", str(LOGS / log), "--worker", worker, "--format", "json",
                     "-o", str(folder / f"{worker}.json")])
        assert code in (0, 1)
    return folder


def _merged(tmp_path: Path, folder: Path) -> dict:
    assert main(["merge", str(folder), "--format", "json", "-o", str(tmp_path / "merged.json")]) in (0, 1)
    doc = json.loads((tmp_path / "merged.json").read_text())
    return next(r for r in doc["results"] if r["id"] == "POD-008")


def test_the_worker_given_the_failing_log_is_named_with_its_exception(tmp_path):
    folder = _worker_reports(tmp_path, {"0": "healthy_jax_training.log", "1": "healthy_jax_training.log",
                                        "2": "healthy_jax_training.log", "3": "sig_hbm-oom-runtime.log"})
    summary = json.loads((folder / "3.json").read_text())
    logs = next(r for r in summary["results"] if r["id"] == "LOGS-001")["evidence"]["log_templates"]
    assert 0 < len(logs["top"]) <= 20 and all(len(t["template"]) <= 200 for t in logs["top"])
    result = _merged(tmp_path, folder)
    assert result["status"] == "WARN"
    assert result["evidence"]["outlier_workers"] == ["3"]
    top = result["evidence"]["own_templates"]["3"][0]
    assert top["template"].startswith("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED") and top["error"]
    assert "worker 3's log" in result["message"] and "RESOURCE_EXHAUSTED" in result["message"]


def test_workers_given_the_same_log_share_their_templates(tmp_path):
    folder = _worker_reports(tmp_path, {w: "healthy_jax_training.log" for w in "012"})
    result = _merged(tmp_path, folder)
    assert result["status"] == "PASS" and "share their templates" in result["message"]


def test_reports_without_summaries_are_skipped(tmp_path):
    folder = tmp_path / "run"
    for worker in "01":  # no --worker: a plain check's report carries no template summary
        assert main(["check", "LOGS-001", "--log-file", str(LOGS / "healthy_jax_training.log"), "--format", "json",
                     "-o", str(folder / f"{worker}.json")]) in (0, 1)
    assert _merged(tmp_path, folder)["status"] == "SKIP"
