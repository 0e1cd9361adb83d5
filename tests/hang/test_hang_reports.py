"""tpudoctor hang on real captures read back (``--replay tests/data/hang/...``): the verdicts, Megascale digests
from Cloud Logging, programs that differ, every format and the exit codes."""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from paths import TESTS

from tpudoctor.cli import main
from tpudoctor.findings import Target
from tpudoctor.hang.analyze import analyze
from tpudoctor.hang.capture import read_dump_dir
from tpudoctor.hang.digest import find_digests
from tpudoctor.schema import validate
from tpudoctor.testing.fake_logging import FakeLoggingServer

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]
CAPTURES = TESTS / "data" / "hang"


def replay(capture: str, *argv: str, fmt: str = "json", tmp_path: Path) -> tuple[int, str]:
    out = tmp_path / f"out.{fmt}"
    code = main(["hang", "--replay", str(CAPTURES / capture), "--format", fmt, "-o", str(out), *argv])
    return code, out.read_text()


def test_a_healthy_capture_passes(tmp_path):
    code, text = replay("healthy", tmp_path=tmp_path)
    report = json.loads(text)
    validate(report, "hang_report")
    assert code == 0 and report["verdict"] == "progressing" and report["steps_per_s"] > 0


@pytest.mark.parametrize("capture", ["data_loader", "checkpoint", "metrics_lock", "device_step"])
def test_every_hung_capture_validates_and_exits_1(capture, tmp_path):
    code, text = replay(capture, tmp_path=tmp_path)
    report = json.loads(text)
    validate(report, "hang_report")
    assert code == 1 and report["verdict"] == "hung" and report["decision"] is not None


def test_text_names_the_stuck_process_and_its_frame_first(tmp_path):
    code, text = replay("data_loader", fmt="text", tmp_path=tmp_path)
    verdict = [line for line in text.splitlines() if line.strip()][2]
    assert verdict.startswith("[✗] HUNG (confidence high): pid ") and "stands in its data loader at read_shard (" in verdict
    assert "Decision: RESTART" in text and "$ kill -KILL" in text


def test_markdown_html_and_junit(tmp_path):
    _code, md = replay("checkpoint", fmt="markdown", tmp_path=tmp_path)
    assert md.startswith("# tpudoctor hang") and "## Decision: RESTART (confidence medium)" in md
    assert "| odd one out |" in md and "```sh" in md
    _code, page = replay("checkpoint", fmt="html", tmp_path=tmp_path)
    assert page.startswith("<!doctype html>") and "write_atomically" in page and '<tr class="marked">' in page
    _code, xml = replay("checkpoint", fmt="junit", tmp_path=tmp_path)
    suite = ET.fromstring(xml).find("testsuite")
    assert suite.get("name") == "tpudoctor hang" and suite.get("failures") == "1"
    case = next(c for c in suite.iter("testcase") if c.get("name").startswith("HANG-001"))
    assert "checkpoint write" in case.find("failure").get("message")


def test_exit_zero_and_fail_on_warn(tmp_path):
    assert replay("data_loader", "--exit-zero", tmp_path=tmp_path)[0] == 0
    assert replay("healthy", "--fail-on", "warn", tmp_path=tmp_path)[0] == 0


BAD_CHIP = """\
Megascale detects a hang that is likely caused by bad TPU chips on the following hosts. Please remove the hosts from the fleet and restart the workload. If problem persists please contact Megascale XLA team.
  The host that have bad TPUs are: t1v-n-1a2b3c4d-w-3
  Full error digest:
    Potential cause: Bad TPU chips
    Potential culprit workers: jax_worker/3:t1v-n-1a2b3c4d-w-3
    TPU stats:
      t1v-n-1a2b3c4d-w-3: 0x3a40
"""


def test_a_megascale_digest_in_cloud_logging_names_the_host_to_replace(fake_tpu_api, monkeypatch, tmp_path):
    from tpudoctor.gcp.session import LOGGING_ENDPOINT_ENV

    with FakeLoggingServer() as logs:
        logs.add_entry(text=BAD_CHIP, severity="ERROR", node_id="my-tpu", worker_id="0", project="p")
        logs.add_entry(text="Unavailable: Socket closed", severity="ERROR", node_id="my-tpu", project="p")
        monkeypatch.setenv(LOGGING_ENDPOINT_ENV, logs.endpoint)
        code, text = replay("device_step", "--since", "1h", "--tpu", "my-tpu", "--project", "p", "--zone",
                            "us-central2-b", "--api-timeout", "5s", tmp_path=tmp_path)
        asked = logs.requests[0]["body"]["filter"]
    report = json.loads(text)
    assert 'resource.labels.node_id="my-tpu"' in asked
    assert code == 1
    cause = report["root_cause"]
    assert cause["category"] == "bad_chip" and cause["hosts"] == ["t1v-n-1a2b3c4d-w-3"]
    assert report["decision"]["action"] == "REPLACE HOST"
    assert any("report-host-as-faulty my-tpu" in c for c in report["decision"]["commands"])
    digest = {f["id"]: f for f in report["findings"]}["HANG-005"]
    assert digest["status"] == "FAIL" and "bad_tpu_chip" in digest["message"]
    assert report["environment"]["cloud_logging"].startswith("Cloud Logging: 2 entries")


def _captures(name: str):
    return read_dump_dir(str(CAPTURES / name))


def _analyze(capture, **kw):
    return analyze(capture.captures, target=Target(tpu="pod", zone="z", project="p"), host=capture.host,
                   started_at=capture.started_at, interval_s=capture.interval_s, samples=capture.samples, **kw)


def test_a_zero_program_counter_points_at_input_not_the_chip():
    capture = _captures("device_step")
    digest = find_digests(BAD_CHIP.replace("0x3a40", "0x0").splitlines(), "worker-0.log")
    report = _analyze(capture, digests=digest)
    assert report.root_cause.category == "data" and "waits on input" in report.root_cause.headline
    assert report.decision.action == "RESTART"


def test_processes_at_different_lines_run_different_programs():
    capture = _captures("device_step")
    other = copy.deepcopy(capture.captures[1])
    for sample in other.samples:  # this process waits in another jitted step: an eval step at line 61
        main_thread = next(t for t in sample.threads if t.name == "MainThread")
        main_thread.frames = [dataclasses.replace(f, line=61, function="eval_step") if f.function == "train_step"
                              else f for f in main_thread.frames]
    other.native = None
    captures = [c for c in capture.captures if c.pid != other.pid] + [other]
    report = analyze(captures, target=Target(), host="vm", started_at=capture.started_at, interval_s=1.0, samples=2)
    assert report.root_cause.category == "inconsistent_program"
    assert report.root_cause.members == [(None, other.pid)]
    assert report.decision.action == "FIX CODE" and "xla_dump_to" in " ".join(report.decision.commands)
    assert {f.id: f.status.value for f in report.findings}["HANG-006"] == "FAIL"


def test_a_replay_keeps_its_own_time():
    capture = _captures("data_loader")
    report = _analyze(capture)
    assert report.started_at == capture.started_at
    stalled = report.root_cause.stalled_since
    assert stalled is not None and _dt.timedelta(0) < capture.started_at - stalled < _dt.timedelta(minutes=5)


def test_merge_reads_the_reports_workers_wrote_themselves(tmp_path):
    import shutil

    from tpudoctor.hang.capture import CAPTURE_FILE

    source = CAPTURES / "data_loader"
    capture = read_dump_dir(str(source))
    stuck = next(c.pid for c in capture.captures if any(
        f.function == "read_shard" for t in c.samples[-1].threads for f in t.frames))
    written = tmp_path / "pods"
    written.mkdir()
    for worker, one in enumerate(sorted(c.pid for c in capture.captures)):  # one process per worker
        dumps = tmp_path / f"dumps-{worker}"
        dumps.mkdir()
        shutil.copy(source / CAPTURE_FILE, dumps / CAPTURE_FILE)
        shutil.copy(source / f"pid-{one}.json", dumps / f"pid-{one}.json")
        out = written / f"train-slice-job-0-{worker}-x7k2p.json"  # as kubectl exec ... > POD.json names it
        main(["hang", "--replay", str(dumps), "--worker", str(worker), "--format", "json", "-o", str(out)])
    merged = tmp_path / "merged.json"
    assert main(["hang", "--merge", str(written), "--format", "json", "-o", str(merged)]) == 1
    report = json.loads(merged.read_text())
    stuck_worker = str(sorted(c.pid for c in capture.captures).index(stuck))
    assert report["root_cause"]["members"] == [{"worker": stuck_worker, "pid": stuck}]
    assert sorted(report["workers"]) == ["0", "1", "2", "3"]
    assert main(["hang", "--merge", str(merged)]) == 2  # a merged report is not a worker's


def test_merge_takes_a_worker_without_a_readable_report_as_a_finding(tmp_path):
    written = tmp_path / "pods"
    written.mkdir()
    main(["hang", "--replay", str(CAPTURES / "healthy"), "--worker", "0", "--format", "json",
          "-o", str(written / "a.json")])
    (written / "train-slice-0-1-q8n4z.json").write_text("")  # kubectl exec failed: nothing written
    merged = tmp_path / "merged.json"
    main(["hang", "--merge", str(written), "--format", "json", "-o", str(merged)])
    report = json.loads(merged.read_text())
    problem = {f["id"]: f for f in report["findings"]}["POD-007"]
    assert problem["scope"]["workers"] == ["train-slice-0-1-q8n4z"] and problem["status"] == "ERROR"
    assert report["workers"]["train-slice-0-1-q8n4z"]["status"] == "no_report"


TPU_INFO_METRICS = """\
TPU Duty Cycle

| Core ID | Duty Cycle (%) |
|---------|----------------|
| 0       | 100.00%        |
| 1       | 100.00%        |
| 2       | 0.00%          |
| 3       | 100.00%        |

TPU HBM Usage

| Chip   | HBM Usage (GiB)       |
|--------|-----------------------|
| 0      | 29.50 GiB / 31.25 GiB |
| 1      | 21.50 GiB / 31.25 GiB |
"""


def test_the_tpu_runtime_view_from_tpu_info(tmp_path, monkeypatch):
    from tpudoctor.hang.capture import tpu_runtime_view

    fake = tmp_path / "bin" / "tpu-info"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\ncat <<'EOF'\n" + TPU_INFO_METRICS + "EOF\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    view = tpu_runtime_view()
    assert view["available"] and view["duty_cycle_percent"] == {"0": 100.0, "1": 100.0, "2": 0.0, "3": 100.0}
    monkeypatch.setenv("PATH", "/nonexistent")
    assert tpu_runtime_view()["available"] is False


@pytest.mark.parametrize(("duty", "confidence", "says"), [
    ({"0": 0.0, "1": 0.0}, "low", "chips idle"),
    ({"0": 100.0, "1": 99.5}, "medium", "chips busy"),
])
def test_idle_chips_make_replace_host_less_sure(duty, confidence, says):
    capture = _captures("device_step")
    report = _analyze(capture, environment={"tpu_info": {"available": True, "duty_cycle_percent": duty}})
    assert report.decision.action == "REPLACE HOST"
    assert report.decision.confidence == confidence and says in report.decision.why


@pytest.mark.parametrize("capture", sorted(p.name for p in CAPTURES.iterdir() if (p / "capture.json").is_file()))
def test_every_format_is_made_from_the_document_read_back(capture):
    from tpudoctor.hang.report import HangReport

    report = _analyze(_captures(capture))
    document = report.to_dict()
    assert HangReport.from_dict(document).to_dict() == document


def test_a_shared_pod_report_is_redacted_in_every_format(tmp_path):
    """Workers' own reports merged and shared with --redact: the VM names, the bucket and the coordinator's IP in
    the command lines are placeholders in every format, the same ones everywhere."""
    import shutil

    from tpudoctor.hang.capture import CAPTURE_FILE

    source = CAPTURES / "data_loader"
    pids = sorted(c.pid for c in read_dump_dir(str(source)).captures)
    written = tmp_path / "workers"
    written.mkdir()
    for worker, pid in enumerate(pids):
        dumps = tmp_path / f"dumps-{worker}"
        dumps.mkdir()
        shutil.copy(source / CAPTURE_FILE, dumps / CAPTURE_FILE)
        shutil.copy(source / f"pid-{pid}.json", dumps / f"pid-{pid}.json")
        out = written / f"{worker}.json"
        main(["hang", "--replay", str(dumps), "--worker", str(worker), "--format", "json", "-o", str(out)])
        document = json.loads(out.read_text())
        vm = f"t1v-n-3f2a9c1e-w-{worker}"
        document["host"] = vm
        for row in document["processes"] + document["captures"]:
            row["host"] = vm
        for row in document["captures"]:
            row["cmdline"] += " --checkpoint_dir=gs://acme-ckpt/run1 --coordinator=10.128.0.7:8476"
        out.write_text(json.dumps(document))
    for fmt in ("json", "text", "markdown", "html", "junit"):
        out = tmp_path / f"shared.{fmt}"
        assert main(["hang", "--merge", str(written), "--redact", "--format", fmt, "-o", str(out)]) == 1
        text = out.read_text()
        for identity in ("t1v-n-3f2a9c1e", "acme-ckpt", "10.128.0.7"):
            assert identity not in text, (fmt, identity)
        if fmt == "json":
            shared = json.loads(text)
            validate(shared, "hang_report")
            assert shared["redacted"] is True
            hosts = {p["host"] for p in shared["processes"]}  # four VMs, four placeholders
            assert len(hosts) == 4 and all(h.startswith("<host-") for h in hosts)
            tails = {" ".join(c["cmdline"].split()[-2:]) for c in shared["captures"]}
            assert len(tails) == 1 and re.fullmatch(r"--checkpoint_dir=gs://<bucket-1>/run1 --coordinator=<ip-\d+>:8476",
                                                    tails.pop())
