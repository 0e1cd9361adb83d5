"""A fixed check report (no clock, no hostname) for golden-file renderer tests."""

from __future__ import annotations

import datetime as dt

from tpudoctor.findings import (
    CheckResult,
    Remediation,
    Report,
    Scope,
    Severity,
    Status,
    Step,
    Target,
)


def preempted_node_report() -> Report:
    results = [
        CheckResult(
            "NODE-001", Step.NODE, "TPU node exists and is READY", Status.FAIL,
            "Node my-tpu is PREEMPTED: a spot node was reclaimed", Severity.CRITICAL,
            evidence={"state": "PREEMPTED", "spot": True, "accelerator_type": "v4-8"},
            remediation=Remediation(
                "Recreate the node, then resume from the last checkpoint in GCS.",
                ("gcloud compute tpus tpu-vm delete my-tpu --zone us-central2-b --project p --quiet",
                 "gcloud compute tpus tpu-vm create my-tpu --zone us-central2-b --project p "
                 "--accelerator-type v4-8 --version tpu-ubuntu2204-base --spot"),
                "https://cloud.google.com/tpu/docs/preemptible",
            ),
            duration_s=0.012,
        ),
        CheckResult("NODE-002", Step.NODE, "TPU chips are visible", Status.SKIP,
                    "blocked by NODE-001 (FAIL)", Severity.INFO, skip_reason="blocked by NODE-001 (FAIL)"),
        CheckResult(
            "GCS-003", Step.GCS, "Bucket is in the TPU's region", Status.WARN,
            "Bucket gs://bucket is in EUROPE-WEST4, the TPU in us-central2", Severity.MEDIUM,
            evidence={"bucket_location": "EUROPE-WEST4", "tpu_region": "us-central2"},
            remediation=Remediation("Copy the data to a bucket in us-central2.",
                                    ("gcloud storage buckets create gs://bucket-us-central2 --location us-central2",)),
            duration_s=0.2,
        ),
        CheckResult("RUNTIME-001", Step.RUNTIME, "Python version is supported by TPU frameworks", Status.PASS,
                    "Python 3.11.7", Severity.INFO, evidence={"python_version": "3.11.7"}, duration_s=0.001),
        CheckResult("LOGS-001", Step.LOGS, "Cloud Logging has no fatal errors", Status.ERROR,
                    "check crashed: KeyError: 'entries'", Severity.MEDIUM,
                    evidence={"exception": "KeyError: 'entries'"}),
    ]
    return Report(
        results=results,
        target=Target(project="p", zone="us-central2-b", tpu="my-tpu", worker=None),
        host="builder",
        started_at=dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.timezone.utc),
        duration_s=1.5,
        tool_version="0.1.0",
    )


def healthy_report() -> Report:
    report = preempted_node_report()
    report.results = [r for r in report.results if r.status is Status.PASS]
    return report


def scoped_report() -> Report:
    """An 8-worker node where findings hold on some workers or hosts only."""
    results = [
        CheckResult("NODE-009", Step.NODE, "Every worker of a multi-host node is reachable", Status.FAIL,
                    "2 of 8 workers do not answer on port 22 (10.130.0.5, 10.130.0.9)", Severity.HIGH,
                    evidence={"unreachable": ["3", "7"]},
                    remediation=Remediation("Restart the unreachable workers' VMs.",
                                            ("gcloud compute tpus tpu-vm ssh my-tpu --zone us-central2-b --worker=3",)),
                    scope=Scope.of(workers=[7, 3])),
        CheckResult("RUNTIME-001", Step.RUNTIME, "Python version is supported by TPU frameworks", Status.PASS,
                    "Python 3.11.7", Severity.INFO, evidence={"python_version": "3.11.7"}),
        CheckResult("LOGS-003", Step.LOGS, "Cloud Logging shows no known TPU failure", Status.WARN,
                    "Transparent hugepages are not enabled", Severity.LOW,
                    scope=Scope.of(workers=[0], hosts=["t1v-n-0"])),
    ]
    return Report(
        results=results,
        target=Target(project="p", zone="us-central2-b", tpu="my-tpu", worker=None),
        host="builder",
        started_at=dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.timezone.utc),
        duration_s=2.0,
        tool_version="0.1.0",
    )
