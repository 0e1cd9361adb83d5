"""Fault injection on every loopback fake: each fault gives its own ERROR (or the check's documented
verdict) with the cause, the rest of the run completes, and the whole run stays inside --timeout."""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator

import pytest
from paths import TESTS

from tpudoctor.gcp.session import LOGGING_ENDPOINT_ENV, MONITORING_ENDPOINT_ENV
from tpudoctor.testing.fake_gcs import FakeGcs
from tpudoctor.testing.fake_logging import FakeLoggingServer
from tpudoctor.testing.fake_metadata import FakeMetadataServer, tpu_vm_metadata
from tpudoctor.testing.fake_monitoring import FakeMonitoringServer
from tpudoctor.testing.fake_tpu_api import FakeTpuApi, make_node
from tpudoctor.testing.faults import (
    ALL_FAULTS,
    UNRESOLVABLE_HOST,
    UNRESOLVABLE_URL,
    FaultProxy,
    TcpFaultProxy,
)
from tpudoctor.tfrecord import encode_records

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

RUN_TIMEOUT_S = 12.0
API_TIMEOUT_S = 1.0
FAKES = ("tpu_api", "metadata", "gcs", "logging", "monitoring")


@contextlib.contextmanager
def world(broken: str | tuple[str, ...], fault: str, monkeypatch) -> Iterator[dict]:
    """All five fakes healthy except ``broken`` (one or several), which suffer ``fault``; env points
    tpudoctor at them."""
    with contextlib.ExitStack() as stack:
        api = stack.enter_context(FakeTpuApi())
        api.add_node(make_node("p", "us-central2-b", "my-tpu", workers=1))
        md = stack.enter_context(FakeMetadataServer(tpu_vm_metadata("p", "us-central2-b", "my-tpu", "v4-8")))
        gcs = stack.enter_context(FakeGcs())
        gcs.create_bucket("bucket", location="US-CENTRAL2")
        gcs.upload("bucket", "train/part-0.tfrecord", encode_records([b"x" * 64]))
        logs = stack.enter_context(FakeLoggingServer())
        logs.add_entry(text="TPU runtime started", severity="WARNING", project="p")
        mon = stack.enter_context(FakeMonitoringServer())
        mon.add_series("tpu.googleapis.com/accelerator/duty_cycle", [40.0, 50.0], project="p")
        urls = {"tpu_api": api.url, "metadata": md.url, "gcs": gcs.url, "logging": logs.endpoint,
                "monitoring": mon.endpoint}
        for fake in (broken,) if isinstance(broken, str) else broken:
            _break(stack, fake, fault, urls, mon)
        monkeypatch.setenv("TPUDOCTOR_TPU_ENDPOINT", urls["tpu_api"])
        monkeypatch.setenv("GCE_METADATA_HOST", urls["metadata"].removeprefix("http://"))
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", urls["gcs"])
        monkeypatch.setenv(LOGGING_ENDPOINT_ENV, urls["logging"])
        monkeypatch.setenv(MONITORING_ENDPOINT_ENV, urls["monitoring"])
        yield {"api": api, "metadata": md, "gcs": gcs, "logging": logs, "monitoring": mon}


ARGS = ["check", "--project", "p", "--zone", "us-central2-b", "--tpu", "my-tpu", "--data", "gs://bucket/train",
        "--step", "1", "--step", "2", "--step", "4", "--format", "json",
        "--timeout", f"{RUN_TIMEOUT_S:g}s", "--api-timeout", f"{API_TIMEOUT_S:g}s"]
CHECK_FOR = {"tpu_api": "NODE-001", "metadata": "NODE-008", "gcs": "GCS-002", "logging": "LOGS-003",
             "monitoring": "LOGS-004"}
# Words the failing check's message must carry: the cause, as a person would name it.
CAUSE = {
    "slow": ("time", "deadline", "did not answer"),
    "reset": ("reset", "unavailable", "broke off", "connect"),
    "429": ("429", "rate", "resource exhausted", "resource_exhausted"),
    "500": ("500", "server error", "internal"),
    "malformed": ("not valid json", "malformed", "deserializ", "not one"),
    "half": ("middle of the answer", "incompleteread", "broke off", "unavailable", "connection", "closed"),
    "dns": ("resolve", "unavailable", "dns", "name"),
}


def run_cli(capsys, extra=()) -> tuple[int, dict, str, float]:
    from tpudoctor.cli import main

    started = time.monotonic()
    rc = main([*ARGS, *extra])
    elapsed_s = time.monotonic() - started
    captured = capsys.readouterr()
    return rc, json.loads(captured.out), captured.err, elapsed_s


def _break(stack: contextlib.ExitStack, fake: str, fault: str, urls: dict, mon: FakeMonitoringServer) -> None:
    if fake == "monitoring":
        if fault == "dns":
            urls[fake] = f"{UNRESOLVABLE_HOST}:1"
        elif fault in TcpFaultProxy.MODES:
            urls[fake] = stack.enter_context(TcpFaultProxy(mon._port, fault)).endpoint
        else:
            mon.fault = fault
    elif fault == "dns":
        urls[fake] = UNRESOLVABLE_URL
    else:
        extra = {"Metadata-Flavor": "Google"} if fake == "metadata" else None
        urls[fake] = stack.enter_context(FaultProxy(urls[fake], fault, extra_headers=extra)).url


@pytest.mark.parametrize("fault", ALL_FAULTS)
@pytest.mark.parametrize("fake", FAKES)
def test_each_fault_is_its_own_error_and_the_run_completes_in_time(fake, fault, gcp_env, monkeypatch, capsys):
    with world(fake, fault, monkeypatch):
        rc, doc, stderr, elapsed_s = run_cli(capsys)
    assert elapsed_s < RUN_TIMEOUT_S + 2.0, f"{fake}/{fault}: the run took {elapsed_s:.1f}s past --timeout"
    assert "Traceback" not in stderr
    results = {r["id"]: r for r in doc["results"]}
    broken = results[CHECK_FOR[fake]]
    assert broken["status"] == "ERROR", (fake, fault, broken)
    message = broken["message"].lower()
    assert any(word in message for word in CAUSE[fault]), (fault, broken["message"])
    assert rc == 1
    # The other fakes' checks still ran to their own verdicts.
    for other, check_id in CHECK_FOR.items():
        if other != fake:
            assert results[check_id]["status"] in ("PASS", "WARN"), (other, results[check_id]["message"])
    # The client's own timeout fired, not the runner's last-resort provider limit.
    assert "' timed out: no answer within" not in message, broken["message"]


def test_a_fake_that_never_answers_cannot_stretch_the_run_past_timeout(gcp_env, monkeypatch, capsys):
    """--api-timeout larger than --timeout: the run limit still wins."""
    with world("gcs", "slow", monkeypatch):
        from tpudoctor.cli import main

        started = time.monotonic()
        main([*ARGS[:-4], "--timeout", "3s", "--api-timeout", "60s"])
        elapsed_s = time.monotonic() - started
    doc = json.loads(capsys.readouterr().out)
    assert elapsed_s < 3.0 + 2.0
    results = {r["id"]: r for r in doc["results"]}
    assert {"NODE-001", "GCS-001", "GCS-002", "LOGS-003"} <= set(results)  # every check still has a result
    stopped = [r for r in results.values() if "time limit (3s)" in (r.get("message") or "")]
    assert stopped and all(r["status"] == "ERROR" for r in stopped)


@pytest.mark.parametrize("fault", ["slow", "reset"])
def test_every_service_broken_at_once_still_finishes_inside_timeout(fault, gcp_env, monkeypatch, capsys):
    with world(FAKES, fault, monkeypatch):
        rc, doc, stderr, elapsed_s = run_cli(capsys)
    assert elapsed_s < RUN_TIMEOUT_S + 2.0
    statuses = {r["id"]: r["status"] for r in doc["results"]}
    assert {statuses[c] for c in CHECK_FOR.values()} == {"ERROR"}, statuses
    assert rc == 1 and "Traceback" not in stderr


# ---------------------------------------------------------------- hostile and odd inputs through the real CLI
#
# Each case builds its input in a folder and gives the command line: the exit code it must end with and
# what its output must hold (no escape sequence, no traceback, markup escaped, JUnit that parses).

ESC_NAME = "1\x1b]0;pwned\x07\x1b[2J\x1b[H\n[✓] ALL GOOD"
MARKUP = "<script>alert(1)</script><img src=x onerror=alert(1)>\n## Root cause: none"


def _check_report(worker: str, **changes) -> dict:
    from sample_reports import preempted_node_report

    doc = preempted_node_report().to_dict()
    doc["target"]["worker"] = worker
    doc["environment"] = {"worker": worker}
    for path, value in changes.items():
        node = doc
        *parents, last = path.split(".")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[int(last) if isinstance(node, list) else last] = value
    return doc


def _reports(folder, *docs, raw: dict | None = None):
    run = folder / "run"
    run.mkdir(parents=True, exist_ok=True)
    for i, doc in enumerate(docs):
        (run / f"{i}.json").write_text(json.dumps(doc))
    for name, text in (raw or {}).items():
        (run / name).write_text(text)
    return run


def _profile_report(folder, *, source: str | None = None, **kpis) -> str:
    """A real profile report (``profile analyze --format json``), with ``source`` and KPIs replaced."""

    from tpudoctor.cli import main

    out = folder / f"profile-{len(list(folder.glob('profile-*')))}.json"
    capture = TESTS / "fixtures" / "profiles" / "jax_compute_bound"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["profile", "analyze", str(capture), "--format", "json", "-o", str(out)])
    doc = json.loads(out.read_text())
    doc["kpis"].update(kpis)
    doc["source"] = source if source is not None else doc["source"]
    out.write_text(json.dumps(doc))  # NaN as NaN, as Python's json writes it
    return str(out)


def _config(folder, text: str) -> list:
    (folder / "tpudoctor.toml").write_text(text)
    return []


def _folder(path) -> list:
    path.mkdir()
    return []


def _gcloud_stand_in(folder) -> dict:
    """A gcloud that only records that it ran: a refused name must never start it."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "gcloud").write_text(f"#!/bin/sh\ntouch {folder / 'gcloud-ran'}\n")
    (bin_dir / "gcloud").chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}


def _capture_with_hostile_host_names(folder) -> str:
    import shutil

    capture = folder / "capture"
    shutil.copytree(TESTS / "fixtures" / "profiles" / "multihost_slow_host", capture)
    run = next(capture.glob("plugins/profile/*"))
    for i, host in enumerate(sorted(run.glob("*.xplane.pb"))):
        host.rename(run / f"w{i}<img src=x onerror=alert(1)>\x1b]0;x\x07.xplane.pb")
    return str(capture)


HOSTILE = {
    # name: (build(folder) -> (argv, env), exit code)
    "tpu name is a gcloud flag (TPU_NAME)": (lambda f: (
        ["check", "--zone", "us-central2-b", "--workers", "0-3"],
        {**_gcloud_stand_in(f), "TPU_NAME": "--ssh-flag=-oProxyCommand=touch /tmp/pwned"}), 2),
    "tpu name is a gcloud flag (config file)": (lambda f: (
        _config(f, 'tpu = "--ssh-flag=-oProxyCommand=id"\nzone = "us-central2-b"\n') + ["check", "--workers", "0"],
        _gcloud_stand_in(f)), 2),
    "zone with a flag in it": (lambda f: (
        ["check", "--tpu", "pod", "--zone=us-central2-b --ssh-flag=x", "--workers", "0"], _gcloud_stand_in(f)), 2),
    "project with a path in it": (lambda f: (
        ["check", "--tpu", "pod", "--zone", "us-central2-b", "--project=p/../../other", "--step", "1"], {}), 2),
    "worker id with a shell command": (lambda f: (["check", "--worker=0;id", "--step", "1"], {}), 2),
    "-o names a folder": (lambda f: (_folder(f / "out") + ["check", "--step", "1", "-o", str(f / "out")], {}), 2),
    "worker id with ESC/OSC and a forged line (text)": (lambda f: (
        ["merge", str(_reports(f, _check_report("0"), _check_report(ESC_NAME)))], {}), 1),
    "worker id with ESC/OSC (junit)": (lambda f: (
        ["merge", str(_reports(f, _check_report("0"), _check_report(ESC_NAME))), "--format", "junit"], {}), 1),
    "message with HTML and a heading (markdown)": (lambda f: (
        ["merge", str(_reports(f, _check_report("0", **{"results.0.message": MARKUP}))), "--format", "markdown"],
        {}), 1),
    "host with HTML (html)": (lambda f: (
        ["merge", str(_reports(f, _check_report("0", host=MARKUP))), "--format", "html"], {}), 1),
    "duration_s NaN": (lambda f: (["merge", str(_reports(f, raw={"0.json": json.dumps(
        _check_report("0")).replace('"duration_s": 1.5', '"duration_s": NaN')}))], {}), 2),
    "duration_s Infinity": (lambda f: (["merge", str(_reports(f, raw={"0.json": json.dumps(
        _check_report("0")).replace('"duration_s": 1.5', '"duration_s": Infinity')}))], {}), 2),
    "duration_s 1e308": (lambda f: (["merge", str(_reports(f, _check_report("0", duration_s=1e308)))], {}), 2),
    "2001 results with one id": (lambda f: (["merge", str(_reports(f, (lambda d: d.update(
        results=d["results"] + [d["results"][-1]] * 2000) or d)(_check_report("0"))))], {}), 2),
    "started_at without an offset, beside a good report": (lambda f: (["merge", str(_reports(
        f, _check_report("0"), _check_report("1", started_at="2026-11-30T10:00:00")))], {}), 1),
    "started_at in the year 9999": (lambda f: (["merge", str(_reports(
        f, _check_report("0", started_at="9999-12-31T23:59:59+00:00")))], {}), 2),
    "report file name with ESC, not JSON": (lambda f: (["merge", str(_reports(f, raw={
        "r\x1b]0;x\x07.json": "{"}))], {}), 2),
    "profile report with NaN (compare)": (lambda f: (
        ["compare", _profile_report(f), _profile_report(f, step_time_mean_ms=float("nan"))], {}), 2),
    "profile source with control characters (compare junit)": (lambda f: (
        ["compare", _profile_report(f), _profile_report(f, source="run-\x1b[31m\x00\x07"), "--format", "junit"],
        {}), 0),
    "capture file names with HTML and ESC (profile html)": (lambda f: (
        ["profile", "analyze", _capture_with_hostile_host_names(f), "--format", "html"], {}), 1),  # FAIL findings
    "capture file names with HTML and ESC (profile markdown)": (lambda f: (
        ["profile", "analyze", _capture_with_hostile_host_names(f), "--format", "markdown"], {}), 1),  # FAIL findings
}


def run_hostile(name: str, folder, monkeypatch) -> tuple[int, str, str, float]:
    """One hostile case through the real CLI in ``folder``: (exit code, stdout, stderr, seconds)."""
    from tpudoctor.cli import main

    build, _expected = HOSTILE[name]
    monkeypatch.chdir(folder)
    argv, env = build(folder)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue(), time.monotonic() - started


def hostile_output_problems(name: str, folder, code: int, out: str, err: str) -> list[str]:
    """What is wrong with a hostile case's outcome (empty: nothing)."""
    import xml.etree.ElementTree as ET

    problems = []
    if code != HOSTILE[name][1]:
        problems.append(f"exit {code}, not {HOSTILE[name][1]}")
    for stream, text in (("stdout", out), ("stderr", err)):
        if "Traceback" in text or "internal error" in text:
            problems.append(f"{stream}: internal error")
        if any(c in text for c in "\x1b\x07\x00\x9b"):
            problems.append(f"{stream}: raw control characters")
    if "junit" in name:
        try:
            ET.fromstring(out.split("\n", 1)[1])
        except ET.ParseError as exc:
            problems.append(f"JUnit does not parse: {exc}")
    if "html" in name and ("<script>alert" in out or "<img" in out):
        problems.append("raw markup in HTML")
    if "markdown" in name:
        from markdown_it import MarkdownIt

        shown = MarkdownIt("commonmark").enable("table").render(out)
        if "<script>alert" in shown or "<img" in shown or "<h2>Root cause: none" in shown:
            problems.append("markup or a heading from a field in Markdown")
    if (folder / "gcloud-ran").exists():
        problems.append("gcloud ran with a name GCP would refuse")
    if any(line.startswith("[✓] ALL GOOD") for line in out.splitlines()):
        problems.append("a forged line")
    return problems


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_input_is_refused_or_shown_never_run(name, gcp_env, monkeypatch, tmp_path):
    folder = tmp_path / "case"
    folder.mkdir()
    code, out, err, elapsed_s = run_hostile(name, folder, monkeypatch)
    assert not hostile_output_problems(name, folder, code, out, err), (code, out[-2000:], err[-2000:])
    assert elapsed_s < 30.0
