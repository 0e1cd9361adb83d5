"""Step 4 end to end: providers, the real cloud clients against loopback fakes, the CLI in every format."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import time
import xml.etree.ElementTree as ET

import pytest
from paths import TESTS

from tpudoctor import cli
from tpudoctor.context import CheckOptions, RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.families import load_registry
from tpudoctor.findings import Scope, Status, Target
from tpudoctor.gcp.session import LOGGING_ENDPOINT_ENV, MONITORING_ENDPOINT_ENV
from tpudoctor.providers.cloud_logging import CloudLoggingProvider, build_filter
from tpudoctor.providers.cloud_monitoring import CloudMonitoringProvider
from tpudoctor.providers.libtpu_logs import LibtpuLogsProvider
from tpudoctor.providers.log_files import LogFilesProvider
from tpudoctor.schema import validate
from tpudoctor.testing import conformance_problems, run_check
from tpudoctor.testing.fake_logging import FakeLoggingServer, filter_matches
from tpudoctor.testing.fake_monitoring import FakeMonitoringServer

LOGS = TESTS / "data" / "logs"
OOM_LOG = LOGS / "multi_warn_then_oom_then_followon.log"


def ctx(**options) -> RunContext:
    target = options.pop("target", Target())
    return RunContext(target=target, options=CheckOptions(**options))


def test_log_checks_conform():
    registry = load_registry()
    for cls in registry.check_classes():
        if cls.id.startswith("LOGS-"):
            assert conformance_problems(cls) == [], cls.id


def test_log_file_provider_streams_files_and_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO((LOGS / "sig_tpu-quota.log").read_text()))
    facts = LogFilesProvider().gather(ctx(log_files=[str(OOM_LOG), "-"]), Facts())
    scan = facts["logs.user_files"]
    assert [s["source"] for s in scan["sources"]] == [str(OOM_LOG), "<stdin>"]
    ids = [d["id"] for d in scan["diagnoses"]]
    assert ids[0] == "hbm-oom-compile" and "tpu-quota" in ids
    assert scan["lines_scanned"] == sum(s["lines"] for s in scan["sources"]) > 30
    assert all(d["scope"]["workers"] == [] for d in scan["diagnoses"])  # which worker is not known


def test_local_logs_are_scoped_to_the_worker_the_run_was_given():
    scan = LogFilesProvider().gather(ctx(target=Target(worker="3"), log_files=[str(OOM_LOG)]),
                                     Facts())["logs.user_files"]
    assert scan["diagnoses"] and all(d["scope"]["workers"] == ["3"] for d in scan["diagnoses"])
    result = run_check(load_registry().checks["LOGS-001"], {"logs.user_files": scan})
    assert result.status is Status.FAIL and result.scope == Scope(workers=("3",))


def test_log_file_provider_unavailable_without_files():
    value = LogFilesProvider().gather(ctx(), Facts())["logs.user_files"]
    assert isinstance(value, Unavailable) and "--log-file" in value.reason


def test_libtpu_logs_reads_tpu_log_dir_recent_files_only(tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_LOG_DIR", str(tmp_path))
    recent = tmp_path / "tpu_driver.t1v-n-1-w-0.me.log.INFO.20240501-100000.4242"
    recent.write_text((LOGS / "sig_tpu-in-use.log").read_text())
    (tmp_path / "tpu_driver.INFO").symlink_to(recent)
    old = tmp_path / "tpu_driver.t1v-n-1-w-0.me.log.INFO.20240101-100000.1"
    old.write_text((LOGS / "sig_hbm-oom.log").read_text())
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    scan = LibtpuLogsProvider().gather(ctx(since_s=3600), Facts())["logs.libtpu"]
    assert [s["source"] for s in scan["sources"]] == [str(recent)]
    assert [d["id"] for d in scan["diagnoses"]] == ["tpu-in-use"]
    longer = LibtpuLogsProvider().gather(ctx(since_s=3 * 86400), Facts())["logs.libtpu"]
    assert {d["id"] for d in longer["diagnoses"]} == {"tpu-in-use", "hbm-oom"}
    on_worker = LibtpuLogsProvider().gather(ctx(target=Target(worker="0"), since_s=3600), Facts())["logs.libtpu"]
    assert [d["scope"]["workers"] for d in on_worker["diagnoses"]] == [["0"]]


def test_libtpu_logs_unavailable_without_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_LOG_DIR", str(tmp_path / "missing"))
    monkeypatch.setenv("TPUDOCTOR_DEFAULT_TPU_LOG_DIR", str(tmp_path / "also-missing"))
    value = LibtpuLogsProvider().gather(ctx(), Facts())["logs.libtpu"]
    assert isinstance(value, Unavailable) and "no libtpu log directory" in value.reason


def test_cloud_logging_filter_is_explicit():
    now = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc)
    query = build_filter({"node_id": "n", "zone": "z", "worker_id": "0"}, 3600, now)
    assert query == ('resource.type="tpu_worker" AND resource.labels.node_id="n" AND resource.labels.zone="z" '
                     'AND resource.labels.worker_id="0" AND severity>=WARNING '
                     'AND timestamp>="2024-05-01T11:00:00.000000Z"')


def test_cloud_logging_through_the_real_client(monkeypatch):
    with FakeLoggingServer(page_size=2) as fake:
        now = dt.datetime.now(dt.timezone.utc)
        fake.add_entry(text="Quota limit 'TPUV4PodPerProjectPerZoneForTPUAPI' has been exceeded. Limit: 32 in zone us-central2-b.",
                       timestamp=now - dt.timedelta(hours=3))  # outside --since 1h
        fake.add_entry(text="step 10 ok", severity="INFO", timestamp=now - dt.timedelta(minutes=9))
        fake.add_entry(text="W cloud_tpu_init.py:80] Transparent hugepages are not enabled.", severity="WARNING",
                       timestamp=now - dt.timedelta(minutes=8))
        for minutes in (7, 6, 5):
            fake.add_entry(text="E tpu_program.cc:88] Unavailable: Socket closed", worker_id="1",
                           timestamp=now - dt.timedelta(minutes=minutes))
        fake.add_entry(json_payload={"message": "Barrier timed out. Id: PjRT_Client_Connect. # of tasks that reached the barrier: 3/4."},
                       timestamp=now - dt.timedelta(minutes=4))
        fake.add_entry(text="Unavailable: Socket closed", node_id="other-node", timestamp=now - dt.timedelta(minutes=3))
        monkeypatch.setenv(LOGGING_ENDPOINT_ENV, fake.endpoint)
        run_ctx = ctx(target=Target(project="my-project", tpu="my-tpu", zone="us-central2-b"), since_s=3600)
        scan = CloudLoggingProvider().gather(run_ctx, Facts())["logs.cloud"]
        assert len(fake.requests) >= 3  # paged through nextPageToken
    body = fake.requests[0]["body"]
    assert body["resourceNames"] == ["projects/my-project"]
    assert 'timestamp>="' in body["filter"] and "severity>=WARNING" in body["filter"]
    assert 'resource.labels.node_id="my-tpu"' in body["filter"]
    assert scan["entries"] == 5
    diagnoses = scan["diagnoses"]
    assert [d["id"] for d in diagnoses] == ["socket-closed", "barrier-timeout", "hugepages-disabled"]
    facts = diagnoses[0]["evidence"]
    assert facts["count"] == 3 and facts["source"] == "cloud-logging:my-tpu/worker-1"
    assert facts["first_line_no"] is None and facts["first_timestamp"]
    assert diagnoses[1]["evidence"]["tasks_at_barrier"] == 3
    # each entry names its worker: the findings say where they hold
    assert diagnoses[0]["scope"]["workers"] == ["1"] and diagnoses[1]["scope"]["workers"] == ["0"]

    node = {"state": "PREEMPTED", "health": None, "symptoms": []}
    result = run_check(load_registry().checks["LOGS-003"], {"logs.cloud": scan, "tpu.node": node})
    assert result.status is Status.FAIL and result.message.startswith("TPU node was preempted")
    assert result.evidence["node_state"] == "PREEMPTED" and result.evidence["count"] == 3
    assert result.scope.workers == ("1",)  # the root cause was logged by worker 1


def test_cloud_logging_403_is_a_fail_naming_the_role_and_the_grant(monkeypatch):
    """Was: a GatherError, so LOGS-003 was an ERROR that named no role and no fix."""
    with FakeLoggingServer() as fake:
        fake.fail_with = (403, "Permission 'logging.logEntries.list' denied on resource (or it may not exist).")
        monkeypatch.setenv(LOGGING_ENDPOINT_ENV, fake.endpoint)
        facts = CloudLoggingProvider().gather(ctx(target=Target(project="p", tpu="t")), Facts())
        assert len(fake.requests) == 1  # a 403 is not retried
    assert isinstance(facts["logs.cloud"], Unavailable) and "LOGS-005" in facts["logs.cloud"].reason
    registry = load_registry()
    logs = run_check(registry.checks["LOGS-003"], {"logs.cloud": facts["logs.cloud"], "tpu.node": {}})
    assert logs.status is Status.SKIP
    access = run_check(registry.checks["LOGS-005"], {"logs.cloud_access": facts["logs.cloud_access"],
                                                     "logs.monitoring_access": Unavailable("not asked")})
    assert access.status is Status.FAIL
    assert "logging.logEntries.list" in access.message and "roles/logging.viewer" in access.message
    # the fake is called anonymously, so the member is a placeholder; with ADC it is the caller (below)
    assert access.remediation.commands == (
        "gcloud projects add-iam-policy-binding p --member=serviceAccount:SERVICE_ACCOUNT_EMAIL "
        "--role=roles/logging.viewer",)


def test_the_grant_names_the_identity_the_client_called_as():
    from tpudoctor.gcp.credentials import Identity
    from tpudoctor.gcp.errors import ApiFailure
    from tpudoctor.providers import read_access

    caller = Identity("trainer@p.iam.gserviceaccount.com", "service_account", "the VM's service account")
    failure = ApiFailure("permission_denied", "denied", http_status=403, permission="logging.logEntries.list")
    value = read_access.denied("Cloud Logging", failure, project="p", identity=caller)
    access = run_check(load_registry().checks["LOGS-005"], {"logs.cloud_access": value,
                                                            "logs.monitoring_access": Unavailable("not asked")})
    assert "trainer@p.iam.gserviceaccount.com lacks logging.logEntries.list" in access.message
    assert access.remediation.commands == (
        "gcloud projects add-iam-policy-binding p --member=serviceAccount:trainer@p.iam.gserviceaccount.com "
        "--role=roles/logging.viewer",)


def test_cloud_logging_server_errors_are_retried_a_bounded_number_of_times_then_an_error(monkeypatch):
    from tpudoctor.facts import GatherError

    with FakeLoggingServer() as fake:
        fake.fail_with = (503, "The service is currently unavailable.")
        monkeypatch.setenv(LOGGING_ENDPOINT_ENV, fake.endpoint)
        value = CloudLoggingProvider().gather(ctx(target=Target(project="p", tpu="t")), Facts())
        attempts = len(fake.requests)
    assert attempts == 3
    assert isinstance(value["logs.cloud"], GatherError) and "HTTP 503" in value["logs.cloud"].error
    assert isinstance(value["logs.cloud_access"], Unavailable)


def test_monitoring_403_is_a_fail_naming_the_role(monkeypatch):
    from tpudoctor.facts import GatherError

    with FakeMonitoringServer() as fake:
        fake.fault = "403"
        monkeypatch.setenv(MONITORING_ENDPOINT_ENV, fake.endpoint)
        facts = CloudMonitoringProvider().gather(ctx(target=Target(project="p", tpu="t")), Facts())
    assert not isinstance(facts["logs.monitoring"], GatherError)
    assert run_check(load_registry().checks["LOGS-004"], {"logs.monitoring": facts["logs.monitoring"]}).status \
        is Status.SKIP
    access = run_check(load_registry().checks["LOGS-005"], {"logs.cloud_access": Unavailable("not asked"),
                                                            "logs.monitoring_access": facts["logs.monitoring_access"]})
    assert access.status is Status.FAIL and "roles/monitoring.viewer" in access.message
    assert access.remediation.commands[0].startswith("gcloud projects add-iam-policy-binding p --member=")
    assert access.remediation.commands[0].endswith("--role=roles/monitoring.viewer")


def test_cloud_logging_skips_without_a_node():
    value = CloudLoggingProvider().gather(ctx(target=Target(project="p")), Facts())["logs.cloud"]
    assert isinstance(value, Unavailable) and "--tpu" in value.reason


def test_fake_logging_refuses_filters_it_cannot_evaluate():
    with pytest.raises(ValueError):
        filter_matches({"severity": "ERROR"}, 'textPayload=~"x"')


def test_fake_logging_has_operator_is_a_substring_match():
    entry = {"resource": {"labels": {"pod_name": "llama-run-slice-job-0-1-x7k2p"}}}
    assert filter_matches(entry, 'resource.labels.pod_name:"llama-run-"')
    assert not filter_matches(entry, 'resource.labels.pod_name:"other-run-"')


@pytest.mark.parametrize(("duty", "status"), [([5.0, 10.0, 15.0], Status.WARN), ([80.0, 90.0, 85.0], Status.PASS)])
def test_monitoring_duty_cycle_through_the_real_client(monkeypatch, duty, status):
    with FakeMonitoringServer() as fake:
        fake.add_series("tpu.googleapis.com/accelerator/duty_cycle", duty, worker_id="0")
        fake.add_series("tpu.googleapis.com/accelerator/duty_cycle", duty, worker_id="1")
        fake.add_series("tpu.googleapis.com/accelerator/duty_cycle", [100.0], node_id="other-node")
        fake.add_series("tpu.googleapis.com/accelerator/memory_used", [10 * 2**30, 12 * 2**30])
        fake.add_series("tpu.googleapis.com/accelerator/memory_total", [32 * 2**30, 32 * 2**30])
        monkeypatch.setenv(MONITORING_ENDPOINT_ENV, fake.endpoint)
        run_ctx = ctx(target=Target(project="my-project", tpu="my-tpu"), since_s=3600)
        data = CloudMonitoringProvider().gather(run_ctx, Facts())["logs.monitoring"]
        assert 'resource.labels.node_id="my-tpu"' in fake.requests[0].filter
        assert fake.requests[0].interval.start_time < fake.requests[0].interval.end_time
    assert data["duty_cycle_points"] == 6
    assert data["duty_cycle_mean_percent"] == pytest.approx(sum(duty) / len(duty))
    assert set(data["duty_cycle_mean_percent_by_worker"]) == {"0", "1"}
    assert data["hbm_used_max_bytes"] == 12 * 2**30 and data["hbm_total_bytes"] == 32 * 2**30
    result = run_check(load_registry().checks["LOGS-004"], {"logs.monitoring": data})
    assert result.status is status
    if status is Status.WARN:
        assert "idle" in result.message and result.remediation is not None


def test_monitoring_without_data_is_unavailable(monkeypatch):
    with FakeMonitoringServer() as fake:
        monkeypatch.setenv(MONITORING_ENDPOINT_ENV, fake.endpoint)
        value = CloudMonitoringProvider().gather(ctx(target=Target(project="p", tpu="t")), Facts())["logs.monitoring"]
    assert isinstance(value, Unavailable) and "no TPU duty-cycle data" in value.reason


def _check(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["check", "--step", "4", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_names_root_cause_first_in_every_format(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_LOG_DIR", str(tmp_path / "no-tpu-logs"))
    monkeypatch.setenv("TPUDOCTOR_DEFAULT_TPU_LOG_DIR", str(tmp_path / "none"))
    monkeypatch.delenv(LOGGING_ENDPOINT_ENV, raising=False)
    log = str(OOM_LOG)

    code, out, _ = _check(capsys, "--log-file", log, "--format", "json")
    assert code == 1
    doc = json.loads(out)
    validate(doc, "check_report")
    assert doc["summary"]["root_cause"] == "LOGS-001"
    (result,) = [r for r in doc["results"] if r["id"] == "LOGS-001"]
    assert result["status"] == "FAIL" and result["message"].startswith("HBM out of memory at compile time")
    assert result["evidence"]["hbm_used_bytes"] == 22054657065
    assert result["evidence"]["location"] == f"{log}:12"
    assert result["remediation"]["docs_url"].startswith("https://")
    assert any("barrier-timeout" in f for f in result["evidence"]["other_findings"])

    code, text, _ = _check(capsys, "--log-file", log, "--format", "text")
    assert text.index("Root cause") < text.index("HBM out of memory") < text.index("4. Logs")
    assert "hbm_used_bytes: 22054657065" in text and "fix:" in text

    code, md, _ = _check(capsys, "--log-file", log, "--format", "markdown")
    # The title names what is looked at, not an outcome: "[✗] Job log shows no error" read as a contradiction
    # (the hostile probe of 2026-12-04, N29).
    assert "## Root cause (step 4, Logs): LOGS-001 Errors in the job log: failed" in md  # not read as a pass
    assert "HBM out of memory" in md and "  - fix: " in md
    assert "22054657065" in md

    code, html, _ = _check(capsys, "--log-file", log, "--format", "html")
    assert "Root cause (step 4, Logs): LOGS-001 Errors in the job log: failed" in html and "HBM out of memory" in html and "22054657065" in html

    code, junit, _ = _check(capsys, "--log-file", log, "--format", "junit")
    root = ET.fromstring(junit)
    (failure,) = root.iter("failure")
    assert failure.get("message").startswith("HBM out of memory at compile time")
    assert "22054657065" in failure.text


def test_cli_healthy_log_passes_and_bad_path_is_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_LOG_DIR", str(tmp_path / "no-tpu-logs"))
    monkeypatch.setenv("TPUDOCTOR_DEFAULT_TPU_LOG_DIR", str(tmp_path / "none"))
    code, out, _ = _check(capsys, "--log-file", str(LOGS / "healthy_jax_training.log"), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["summary"]["counts"]["FAIL"] == 0
    assert [r["status"] for r in doc["results"] if r["id"] == "LOGS-001"] == ["PASS"]
    code, _, err = _check(capsys, "--log-file", str(tmp_path / "nope.log"))
    assert code == 2 and "no such file" in err and "Traceback" not in err


def test_the_log_checks_titles_read_right_whatever_their_status():
    """A title that states the passing outcome ("Job log shows no error") reads as a contradiction beside a
    FAIL; the log-error checks name what they look at."""
    from tpudoctor.families import load_registry

    checks = load_registry(plugins=False).checks
    for check_id in ("LOGS-001", "LOGS-002", "LOGS-003"):
        title = checks[check_id].title
        assert title.startswith("Errors in ") and "no error" not in title, (check_id, title)
