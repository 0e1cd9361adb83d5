"""POD-008: the worker whose log has templates its peers' lack, from reports `check --worker N --log-file` wrote."""

from __future__ import annotations

import json
from pathlib import Path

from paths import TESTS

from tpudoctor.cli import main

LOGS = TESTS / "data" / "logs"


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


def test_every_worker_a_little_unique_is_no_outlier_but_an_error_of_its_own_is():
    from tpudoctor.checks.slice._examples import fanned_out, logs_templated, worker_report
    from tpudoctor.checks.slice.log_outliers import LogOutliers
    from tpudoctor.facts import Facts
    from tpudoctor.findings import Status

    step = ("<TIME> INFO trainer.py:<NUM>] step <NUM> loss=<NUM>", 400, False)

    def judged(*own):
        reports = [worker_report(str(w), results=(logs_templated(step, extra),)) for w, extra in enumerate(own)]
        return LogOutliers().evaluate(Facts(fanned_out(*reports)))

    # each worker logs its own hostname line: every one is unique, none stands out
    hosts = [(f"connected to coordinator from host-{w}", 1, False) for w in range(4)]
    assert judged(*hosts).status is Status.PASS
    # two workers, each with its own line and no error: nothing says which one is odd
    assert judged(*hosts[:2]).status is Status.PASS
    oom = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer", 1, True)
    result = judged(hosts[0], oom)
    assert result.status is Status.WARN and result.evidence["outlier_workers"] == ["1"]
    assert "only 2 workers compared" in result.message


def test_template_summaries_are_scrubbed_of_secrets(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("I1205 10:00:00.000 1 fetch.py:12] fetching with token "
                   "ya29.a0AfH6SMBxyzSECRETSECRETSECRET0123456789abcdef\n")
    assert main(["check", "LOGS-001", "--log-file", str(log), "--worker", "0", "--format", "json",
                 "-o", str(tmp_path / "0.json")]) in (0, 1)
    text = (tmp_path / "0.json").read_text()
    assert "log_templates" in text and "ya29.a0AfH6SMB" not in text
