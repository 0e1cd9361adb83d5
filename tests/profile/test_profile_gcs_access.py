"""``profile analyze gs://...`` reads through tpudoctor.gcp: bounded retries and a 403 that names the role."""

from __future__ import annotations

import json

from paths import TESTS

from tpudoctor.cli import main
from tpudoctor.exitcodes import ExitCode

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

CAPTURE = TESTS / "fixtures" / "profiles" / "jax_steady" / "localhost.xplane.pb"
RUN = "job/plugins/profile/2024_05_05_05_05_05"


def _seed(gcs) -> None:
    gcs.create_bucket("profiles")
    gcs.upload("profiles", f"{RUN}/localhost.xplane.pb", CAPTURE.read_bytes())


def test_a_403_listing_the_logdir_names_the_permission_role_and_grant(fake_gcs, capsys):
    _seed(fake_gcs)
    fake_gcs.deny("profiles", "storage.objects.list")
    assert main(["profile", "analyze", "gs://profiles/job"]) == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert "permission denied" in err and "storage.objects.list" in err and "roles/storage.objectViewer" in err
    assert "gcloud storage buckets add-iam-policy-binding gs://profiles" in err
    assert "Traceback" not in err


def test_a_server_error_reading_a_host_file_is_retried(fake_gcs, capsys):
    _seed(fake_gcs)
    fake_gcs.fail(503, times=1, path_contains="localhost.xplane.pb")
    assert main(["profile", "analyze", "gs://profiles/job", "--format", "json"]) == ExitCode.OK
    report = json.loads(capsys.readouterr().out)
    assert [h["hostname"] for h in report["summary"]["hosts"]] == ["localhost"]
    downloads = [r for r in fake_gcs.requests if "localhost.xplane.pb" in r]
    assert len(downloads) == 2  # the injected 503, then the answer


def test_server_errors_that_persist_end_after_bounded_attempts(fake_gcs, capsys):
    _seed(fake_gcs)
    fake_gcs.fail(503, times=10, path_contains="/o")
    assert main(["profile", "analyze", "gs://profiles/job"]) == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert "cannot list gs://profiles/job/: server error after 3 attempts" in err, err
    assert fake_gcs.requests.count("GET /storage/v1/b/profiles/o") == 3
