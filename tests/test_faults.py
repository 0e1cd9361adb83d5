"""Fault injection on every loopback fake: each fault gives its own ERROR (or the check's documented
verdict) with the cause, the rest of the run completes, and the whole run stays inside --timeout."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator

import pytest

from tpudoctor.providers.gcp_clients import LOGGING_ENDPOINT_ENV, MONITORING_ENDPOINT_ENV
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
