"""Step 4 through the CLI when the caller may not read Cloud Logging or Cloud Monitoring (HTTP 403 / gRPC
PERMISSION_DENIED from the real clients against the loopback fakes): one FAIL with the roles and the grants."""

from __future__ import annotations

import json

from tpudoctor.cli import main
from tpudoctor.exitcodes import ExitCode
from tpudoctor.gcp.session import LOGGING_ENDPOINT_ENV, MONITORING_ENDPOINT_ENV
from tpudoctor.testing.fake_logging import FakeLoggingServer
from tpudoctor.testing.fake_monitoring import FakeMonitoringServer
from tpudoctor.testing.fake_tpu_api import make_node

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

PROJECT, ZONE = "acme-prod-123", "us-central2-b"
ARGS = ["check", "--step", "4", "--project", PROJECT, "--zone", ZONE, "--tpu", "my-tpu", "--api-timeout", "3s"]


def test_no_read_access_to_logging_and_monitoring_is_one_fail_with_both_grants(fake_tpu_api, monkeypatch, capsys):
    fake_tpu_api.add_node(make_node(PROJECT, ZONE, "my-tpu"))
    with FakeLoggingServer() as logs, FakeMonitoringServer() as metrics:
        logs.fail_with = (403, f"Permission 'logging.logEntries.list' denied on resource 'projects/{PROJECT}'")
        metrics.fault = "403"
        monkeypatch.setenv(LOGGING_ENDPOINT_ENV, logs.endpoint)
        monkeypatch.setenv(MONITORING_ENDPOINT_ENV, metrics.endpoint)
        code = main([*ARGS, "--format", "json"])
        report = json.loads(capsys.readouterr().out)
        main([*ARGS, "--format", "text"])
        text = capsys.readouterr().out
    assert code == ExitCode.FINDINGS
    results = {r["id"]: r for r in report["results"]}
    access = results["LOGS-005"]
    assert access["status"] == "FAIL" and report["summary"]["root_cause"] == "LOGS-005"
    assert "roles/logging.viewer" in access["message"] and "roles/monitoring.viewer" in access["message"]
    assert [c.split("--role=")[1] for c in access["remediation"]["commands"]] == [
        "roles/logging.viewer", "roles/monitoring.viewer"]
    assert all(c.startswith(f"gcloud projects add-iam-policy-binding {PROJECT} --member=")
               for c in access["remediation"]["commands"])
    assert results["LOGS-003"]["status"] == "SKIP" and results["LOGS-004"]["status"] == "SKIP"
    assert not [r for r in report["results"] if r["status"] == "ERROR"]
    assert f"$ gcloud projects add-iam-policy-binding {PROJECT}" in text


def test_without_credentials_logging_and_monitoring_are_skipped_with_the_fix(gcp_env):
    from tpudoctor.context import CheckOptions, RunContext
    from tpudoctor.facts import Facts, Unavailable
    from tpudoctor.findings import Target
    from tpudoctor.providers.cloud_logging import CloudLoggingProvider
    from tpudoctor.providers.cloud_monitoring import CloudMonitoringProvider

    run_ctx = RunContext(target=Target(project=PROJECT, tpu="my-tpu"), options=CheckOptions(api_timeout_s=2.0))
    for provider in (CloudLoggingProvider(), CloudMonitoringProvider()):
        values = provider.gather(run_ctx, Facts())
        assert set(values) == set(provider.provides)
        for value in values.values():
            assert isinstance(value, Unavailable) and "gcloud auth application-default login" in value.reason
