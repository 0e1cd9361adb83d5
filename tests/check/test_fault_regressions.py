"""Regression tests, one per bug the fault matrix found (tests/check/test_faults.py runs the whole matrix)."""

from __future__ import annotations

import time

import pytest

from tpudoctor.context import CheckOptions, RunContext
from tpudoctor.facts import Facts, GatherError, Unavailable
from tpudoctor.findings import Target
from tpudoctor.gcp.errors import TRUNCATED, failure_from_exception
from tpudoctor.gcp.session import MONITORING_ENDPOINT_ENV
from tpudoctor.providers.cloud_monitoring import CloudMonitoringProvider
from tpudoctor.providers.metadata import MetadataProvider
from tpudoctor.testing.fake_metadata import FakeMetadataServer, tpu_vm_metadata
from tpudoctor.testing.fake_monitoring import FakeMonitoringServer
from tpudoctor.testing.faults import UNRESOLVABLE_HOST, FaultProxy, TcpFaultProxy

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]


def _ctx(**target) -> RunContext:
    return RunContext(target=Target(**target), options=CheckOptions(api_timeout_s=1.0), run_timeout_s=30)


def _metadata_fact():
    return MetadataProvider().gather(_ctx(), Facts({}))["metadata.tpu_vm"]


@pytest.mark.parametrize("mode", ["500", "429", "reset", "half", "malformed"])
def test_a_broken_metadata_server_is_an_error_not_a_machine_off_google_cloud(mode, gcp_env, monkeypatch):
    """Was: every metadata failure read as 'not running on a Google Cloud VM', so checks SKIPped."""
    with FakeMetadataServer(tpu_vm_metadata("p", "us-central2-b", "my-tpu")) as md, \
            FaultProxy(md.url, mode, extra_headers={"Metadata-Flavor": "Google"}) as proxy:
        monkeypatch.setenv("GCE_METADATA_HOST", proxy.host)
        value = _metadata_fact()
    assert isinstance(value, GatherError) and "metadata server is broken" in value.error


def test_no_metadata_server_is_still_a_skip(gcp_env):
    value = _metadata_fact()  # gcp_env points at a port where nothing listens
    assert isinstance(value, Unavailable) and "not running on a Google Cloud VM" in value.reason


def test_silence_on_a_vm_whose_firmware_says_google_is_an_error(gcp_env, monkeypatch):
    (gcp_env / "sys" / "class" / "dmi" / "id").mkdir(parents=True)
    (gcp_env / "sys" / "class" / "dmi" / "id" / "product_name").write_text("Google Compute Engine\n")
    monkeypatch.setenv("GCE_METADATA_IP", "")
    monkeypatch.delenv("GCE_METADATA_HOST")
    from tpudoctor.gcp import metadata

    monkeypatch.setattr(metadata, "DEFAULT_METADATA_HOST", f"{UNRESOLVABLE_HOST}:1")
    value = _metadata_fact()
    assert isinstance(value, GatherError) and "did not answer" in value.error


@pytest.mark.parametrize("mode", ["reset", "half"])
def test_monitoring_retries_end_at_api_timeout(mode, monkeypatch):
    """Was: api_core's default policy retried UNAVAILABLE for up to a minute, past --api-timeout."""
    with FakeMonitoringServer() as fake, TcpFaultProxy(fake._port, mode) as proxy:
        fake.add_series("tpu.googleapis.com/accelerator/duty_cycle", [50.0])
        monkeypatch.setenv(MONITORING_ENDPOINT_ENV, proxy.endpoint)
        started = time.monotonic()
        value = CloudMonitoringProvider().gather(_ctx(project="my-project", tpu="my-tpu"), Facts({}))
        elapsed_s = time.monotonic() - started
    assert isinstance(value["logs.monitoring"], GatherError)
    assert "still failing when the retry time ran out" in value["logs.monitoring"].error
    assert elapsed_s < 3.0


def test_a_cut_off_answer_is_named_as_such():
    """Was: 'unknown: ChunkedEncodingError ...'."""
    import requests

    failure = failure_from_exception(requests.exceptions.ChunkedEncodingError("IncompleteRead(24 bytes read)"))
    assert failure.kind == TRUNCATED and "closed in the middle of the answer" in failure.message
