"""Step 2 against gcp-storage-emulator (behind the fault proxy) through google-cloud-storage."""

from __future__ import annotations

import gzip

import pytest
from _step12_helpers import commands, run_ids

from tpudoctor.findings import Status
from tpudoctor.testing.fake_tpu_api import make_node
from tpudoctor.tfrecord import encode_records

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

ALL = ["GCS-001", "GCS-002", "GCS-003", "GCS-004", "GCS-005", "GCS-006", "GCS-007"]


@pytest.fixture
def bucket(fake_gcs):
    fake_gcs.create_bucket("bucket", location="US-CENTRAL2")
    fake_gcs.upload("bucket", "train/part-0.tfrecord", encode_records([b"a" * 100, b"b" * 50]))
    fake_gcs.upload("bucket", "train/part-1.tfrecord", encode_records([b"c" * 10]))
    return fake_gcs


def test_healthy_data_bucket_passes_and_reports_count_and_size(bucket):
    results, _ = run_ids(ALL, data_paths=["gs://bucket/train"])
    statuses = {k: r.status for k, r in results.items()}
    assert statuses == {"GCS-001": Status.PASS, "GCS-002": Status.PASS, "GCS-003": Status.PASS,
                        "GCS-004": Status.PASS, "GCS-005": Status.PASS, "GCS-006": Status.PASS,
                        "GCS-007": Status.SKIP}
    objects = results["GCS-005"].evidence["paths"]["gs://bucket/train"]
    assert objects["object_count"] == 2 and objects["total_bytes"] == 100 + 50 + 10 + 3 * 16
    assert "gs://bucket/train: 2 objects" in results["GCS-005"].message
    assert "3 record(s) in 2 file(s)" in results["GCS-006"].message
    assert "--write-probe was not given" in results["GCS-007"].skip_reason
    assert not any(r.startswith(("POST", "DELETE")) for r in bucket.requests)  # never writes unasked


def test_missing_bucket_fails_with_create_command(bucket):
    results, _ = run_ids(ALL, data_paths=["gs://no-such-bucket/train"])
    missing = results["GCS-002"]
    assert missing.status is Status.FAIL and "gs://no-such-bucket" in missing.message
    assert commands(missing) == ["gcloud storage buckets create gs://no-such-bucket --location=us-central2 "
                                 "--project=p --uniform-bucket-level-access"]
    assert results["GCS-003"].skip_reason == "blocked by GCS-002 (FAIL)"


@pytest.mark.parametrize("location,status", [("US-CENTRAL2", Status.PASS), ("US", Status.PASS),
                                             ("EU", Status.WARN), ("ASIA-EAST1", Status.WARN)])
def test_bucket_location_versus_tpu_region(fake_gcs, location, status):
    fake_gcs.create_bucket("bucket", location=location)
    result = run_ids(["GCS-002", "GCS-003"], data_paths=["gs://bucket/train"])[0]["GCS-003"]
    assert result.status is status
    if status is Status.WARN:
        assert "egress" in result.message and "latency" in result.message
        assert commands(result)[0].startswith("gcloud storage buckets create gs://bucket-us-central2 --location=us-central2")


def test_checkpoint_dir_without_write_permission_names_role_and_command(bucket, fake_tpu_api):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu", service_account="job-sa@p.iam.gserviceaccount.com"))
    bucket.deny("bucket", "storage.objects.create", "storage.objects.delete")
    result = run_ids(["NODE-001", "GCS-002", "GCS-004"], data_paths=["gs://bucket/train"],
                     checkpoint_dirs=["gs://bucket/ckpt"])[0]["GCS-004"]
    assert result.status is Status.FAIL
    assert "gs://bucket lacks storage.objects.create, storage.objects.delete" in result.message
    assert "the job runs as job-sa@p.iam.gserviceaccount.com" in result.message
    assert commands(result) == ["gcloud storage buckets add-iam-policy-binding gs://bucket "
                                "--member=serviceAccount:job-sa@p.iam.gserviceaccount.com --role=roles/storage.objectUser"]


def test_folder_path_does_not_count_sibling_prefixes(bucket):
    bucket.upload("bucket", "train-old/part-9.tfrecord", encode_records([b"z"]))
    result = run_ids(ALL, data_paths=["gs://bucket/train"])[0]["GCS-005"]
    assert result.evidence["paths"]["gs://bucket/train"]["object_count"] == 2


def test_empty_data_prefix_fails(bucket):
    result = run_ids(ALL, data_paths=["gs://bucket/trian"])[0]["GCS-005"]
    assert result.status is Status.FAIL and "no objects under gs://bucket/trian" in result.message


def test_glob_data_path_counts_matching_objects(bucket):
    result = run_ids(ALL, data_paths=["gs://bucket/train/part-1*"])[0]["GCS-005"]
    assert result.status is Status.PASS
    assert result.evidence["paths"]["gs://bucket/train/part-1*"]["object_count"] == 1


@pytest.mark.parametrize("name,data,status,words", [
    ("train/a.tfrecord", encode_records([b"x" * 40])[:-1] + b"\0", Status.FAIL, "corrupt TFRecord"),
    ("train/a.csv", b"feature,label\n1.0,0\n2.0,1\n", Status.WARN, "text (CSV or plain text)"),
    ("train/a.tfrecord", b"feature,label\n1.0,0\n2.0,1\n", Status.FAIL, "named .tfrecord are not TFRecords"),
    ("train/a.tfrecord.gz", gzip.compress(encode_records([b"x" * 40])), Status.WARN, "compression_type='GZIP'"),
    ("train/a.parquet", b"PAR1" + b"\0" * 64, Status.WARN, "Parquet"),
], ids=["corrupt", "csv", "csv-named-tfrecord", "gzip", "parquet"])
def test_tfrecord_framing_of_first_records(fake_gcs, name, data, status, words):
    fake_gcs.create_bucket("bucket", location="US-CENTRAL2")
    fake_gcs.upload("bucket", name, data)
    result = run_ids(ALL, data_paths=["gs://bucket/train"])[0]["GCS-006"]
    assert result.status is status, result.message
    assert words in result.message


def test_write_probe_writes_and_deletes_one_object(bucket):
    result = run_ids(ALL, data_paths=["gs://bucket/train"], checkpoint_dirs=["gs://bucket/ckpt"],
                     write_probe=True)[0]["GCS-007"]
    assert result.status is Status.PASS
    probe = result.evidence["probes"][0]
    assert probe["written"] and probe["deleted"] and probe["object"].startswith("gs://bucket/ckpt/.tpudoctor-probe-")
    assert bucket.object_names("bucket") == ["train/part-0.tfrecord", "train/part-1.tfrecord"]


def test_write_probe_reports_a_failed_delete(bucket):
    bucket.deny("bucket", "storage.objects.delete")
    results, _ = run_ids(["GCS-002", "GCS-007"], checkpoint_dirs=["gs://bucket/ckpt"], write_probe=True)
    result = results["GCS-007"]
    assert result.status is Status.FAIL and "could not delete it" in result.message
    left = result.evidence["probes"][0]["object"]
    assert commands(result) == [f"gcloud storage rm {left}"]


def test_gcs_503_then_success_and_timeout(bucket):
    bucket.fail(503, times=1, path_contains="/b/bucket")
    assert run_ids(["GCS-002"], data_paths=["gs://bucket/train"])[0]["GCS-002"].status is Status.PASS
    bucket.fail(200, times=1, path_contains="/b/bucket", delay_s=1.5)
    result = run_ids(["GCS-002"], data_paths=["gs://bucket/train"], api_timeout_s=0.3)[0]["GCS-002"]
    assert result.status is Status.ERROR and "timeout" in result.message


def test_bad_uri_blocks_the_remote_checks(bucket):
    results, _ = run_ids(ALL, data_paths=["gs:/bucket/train"])
    assert results["GCS-001"].status is Status.FAIL
    assert "use gs://bucket/train instead of gs:/bucket/train" in results["GCS-001"].remediation.text
    assert results["GCS-002"].skip_reason == "blocked by GCS-001 (FAIL)"
    assert bucket.requests == []


def test_no_credentials_for_real_gcs(gcp_env):
    result = run_ids(["GCS-002"], data_paths=["gs://bucket/train"])[0]["GCS-002"]
    assert result.status is Status.FAIL and "no Google Cloud credentials" in result.message
    assert "gcloud auth application-default login" in commands(result)


def test_unreadable_bucket_metadata_warns_and_location_is_skipped(bucket):
    bucket.deny("bucket", "storage.buckets.get")
    results, _ = run_ids(["GCS-001", "GCS-002", "GCS-003", "GCS-004"], data_paths=["gs://bucket/train"])
    assert results["GCS-002"].status is Status.WARN
    assert "storage.buckets.get denied" in results["GCS-002"].message
    assert commands(results["GCS-002"])[0].endswith("--role=roles/storage.bucketViewer")
    assert results["GCS-003"].status is Status.SKIP
    assert results["GCS-004"].status is Status.PASS


def test_permission_test_failing_is_an_error_not_a_pass(bucket):
    bucket.fail(500, times=10, path_contains="/iam/testPermissions")
    result = run_ids(["GCS-002", "GCS-004"], data_paths=["gs://bucket/train"])[0]["GCS-004"]
    assert result.status is Status.ERROR and "could not test permissions on gs://bucket" in result.message
