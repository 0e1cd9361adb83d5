"""The issue's must-show scenarios, end to end through the CLI against the loopback fakes."""

from __future__ import annotations

import json
import time

from tpudoctor.cli import main
from tpudoctor.schema import validate
from tpudoctor.testing.fake_tpu_api import make_node
from tpudoctor.tfrecord import encode_records

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

ARGS = ["check", "--project", "p", "--zone", "us-central2-b", "--tpu", "my-tpu", "--data", "gs://bucket/train",
        "--step", "1", "--step", "2"]


def _seed(api, gcs):
    api.add_node(make_node("p", "us-central2-b", "my-tpu", state="PREEMPTED", spot=True, health=None))
    gcs.create_bucket("bucket", location="EUROPE-WEST4")
    gcs.upload("bucket", "train/part-0.tfrecord", encode_records([b"x" * 64]))
    gcs.deny("bucket", "storage.objects.list")


def test_preempted_spot_node_and_cross_region_bucket_without_list_text(fake_tpu_api, fake_gcs, capsys):
    _seed(fake_tpu_api, fake_gcs)
    rc = main(ARGS)
    out = capsys.readouterr().out
    assert rc == 1
    root = out.split("1. Node state and resources")[0]
    assert "Root cause (step 1" in root and "NODE-001" in root and "was preempted" in root
    assert "gcloud compute tpus tpu-vm delete my-tpu --zone us-central2-b --project p --quiet" in root
    assert "gcloud compute tpus tpu-vm create my-tpu --zone us-central2-b --project p" in root
    assert "--accelerator-type v4-8 --version tpu-vm-tf-2.16.1-pjrt --spot" in root.replace("\n", " ").replace("  ", " ")
    flat = " ".join(out.split())
    assert "gs://bucket is in EUROPE-WEST4, the TPU is in us-central2" in flat and "egress" in flat
    assert "gs://bucket lacks storage.objects.list" in flat
    assert ("gcloud storage buckets add-iam-policy-binding gs://bucket "
            "--member=serviceAccount:tpu-sa@p.iam.gserviceaccount.com --role=roles/storage.objectViewer") in flat


def test_preempted_spot_node_and_cross_region_bucket_without_list_json(fake_tpu_api, fake_gcs, capsys):
    _seed(fake_tpu_api, fake_gcs)
    rc = main(ARGS + ["--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    validate(doc, "check_report")
    assert rc == 1
    problems = {r["id"]: r for r in doc["results"] if r["status"] in ("FAIL", "WARN", "ERROR")}
    assert {k: v["status"] for k, v in problems.items()} == {"NODE-001": "FAIL", "GCS-003": "WARN", "GCS-004": "FAIL"}
    assert doc["summary"]["root_cause"] == "NODE-001"
    node = problems["NODE-001"]
    assert node["evidence"]["state"] == "PREEMPTED" and node["evidence"]["spot"] is True
    assert any("tpu-vm create my-tpu" in c and "--spot" in c for c in node["remediation"]["commands"])
    region = problems["GCS-003"]
    assert region["evidence"]["buckets"]["bucket"]["location"] == "EUROPE-WEST4"
    assert region["evidence"]["tpu_region"] == "us-central2"
    perms = problems["GCS-004"]
    assert perms["evidence"]["buckets"]["bucket"]["missing"] == ["storage.objects.list"]
    assert perms["remediation"]["commands"] == [
        "gcloud storage buckets add-iam-policy-binding gs://bucket "
        "--member=serviceAccount:tpu-sa@p.iam.gserviceaccount.com --role=roles/storage.objectViewer"]
    blocked = {r["id"]: r["skip_reason"] for r in doc["results"] if r["status"] == "SKIP"}
    assert blocked["NODE-002"] == "blocked by NODE-001 (FAIL)"
    assert blocked["GCS-005"] == "blocked by GCS-004 (FAIL)"


def test_plain_machine_steps_1_and_2_skip_quickly(monkeypatch, capsys, tmp_path):
    """No fakes and no overrides: the real metadata address and the real /sys, /proc."""
    for var in ("TPUDOCTOR_TPU_ENDPOINT", "STORAGE_EMULATOR_HOST", "GCE_METADATA_HOST", "GCE_METADATA_IP",
                "TPU_NAME", "CLOUDSDK_CORE_PROJECT", "CLOUDSDK_COMPUTE_ZONE", "TPUDOCTOR_SYSFS_ROOT",
                "TPUDOCTOR_PROC_ROOT", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    rc = main(["check", "--step", "1", "--step", "2", "--format", "json"])
    elapsed_s = time.monotonic() - started
    doc = json.loads(capsys.readouterr().out)
    validate(doc, "check_report")
    assert rc == 0
    statuses = {r["id"]: r["status"] for r in doc["results"]}
    assert set(statuses.values()) == {"SKIP"}, statuses
    reasons = {r["id"]: r["skip_reason"] for r in doc["results"]}
    assert "pass --tpu NAME --zone ZONE --project PROJECT" in reasons["NODE-001"]
    assert "not running on a TPU VM" in reasons["NODE-004"]
    assert "no data, checkpoint or log paths were given" in reasons["GCS-001"]
    assert elapsed_s < 3.0, f"steps 1 and 2 took {elapsed_s:.1f}s on a machine without a TPU or cloud"
