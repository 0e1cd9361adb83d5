from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.cloud_knowledge.iam import ADC_SETUP_COMMANDS
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

_TARGET = {"project": "p", "zone": "us-central2-b", "region": "us-central2"}
_OK = {"bucket": {"bucket": "bucket", "exists": True, "location": "US-CENTRAL2", "failure": None, "paths": ["gs://bucket/train"]}}


class BucketExists(Check):
    """Every bucket named in a gs:// path exists and its metadata can be read."""

    id = "GCS-002"
    title = "GCS buckets exist"
    step = Step.GCS
    requires = ("GCS-001",)
    facts = ("gcs.buckets", "tpu.target")
    severity = Severity.CRITICAL
    docs = "https://cloud.google.com/storage/docs/creating-buckets"
    examples = (
        Example("exists", {"gcs.buckets": _OK, "tpu.target": _TARGET}, Status.PASS),
        Example("missing", {"gcs.buckets": {"nobucket": {"bucket": "nobucket", "exists": False, "paths": ["gs://nobucket/x"],
                                                         "failure": {"kind": "not_found", "message": "Not Found"}}},
                            "tpu.target": _TARGET}, Status.FAIL),
        Example("metadata unreadable", {"gcs.buckets": {"b": {"bucket": "b", "exists": True, "paths": ["gs://b/x"],
                                                              "failure": {"kind": "permission_denied", "message": "denied",
                                                                          "permission": "storage.buckets.get",
                                                                          "role": "roles/storage.bucketViewer"}}},
                                        "tpu.target": _TARGET}, Status.WARN),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        buckets = facts.require("gcs.buckets")
        target = facts.value("tpu.target") or {}
        missing, unreadable, broken, no_creds = [], [], [], []
        for name, info in buckets.items():
            failure = info.get("failure") or {}
            if info.get("exists") is False:
                missing.append(name)
            elif failure.get("kind") == "no_credentials":
                no_creds.append(name)
            elif failure.get("kind") == "permission_denied":
                unreadable.append(name)
            elif failure:
                broken.append((name, failure))
        evidence = {"buckets": {n: {k: i.get(k) for k in ("exists", "location", "location_type", "failure", "paths")}
                                for n, i in buckets.items()}}
        if no_creds:
            return self.fail(f"no Google Cloud credentials to read gs://{no_creds[0]}: "
                             f"{buckets[no_creds[0]]['failure']['message']}", evidence=evidence,
                             remediation=remediation("Set up Application Default Credentials (or run on the TPU VM).",
                                                     *ADC_SETUP_COMMANDS))
        if missing:
            region, project = target.get("region"), target.get("project")
            return self.fail(
                f"bucket(s) not found: {', '.join('gs://' + b for b in missing)}", evidence=evidence,
                remediation=remediation(
                    "Check the bucket name (and project); create the bucket in the TPU's region if it should exist.",
                    *(gcloud.bucket_create(b, region, project) for b in missing)))
        if broken:
            name, failure = broken[0]
            return self.error(f"could not read gs://{name}: {failure.get('kind')}: {failure.get('message')}",
                              evidence=evidence)
        if unreadable:
            role = (buckets[unreadable[0]]["failure"].get("role") or "roles/storage.bucketViewer")
            return self.warn(
                f"bucket metadata of {', '.join('gs://' + b for b in unreadable)} cannot be read "
                "(storage.buckets.get denied): existence confirmed through the permission test, location unknown",
                evidence=evidence, severity=Severity.LOW,
                remediation=remediation(f"Grant {role} on the bucket so its location can be checked.",
                                        *(gcloud.bucket_role_binding(b, None, role) for b in unreadable)))
        return self.passed(f"{len(buckets)} bucket(s) exist: {', '.join('gs://' + b for b in buckets)}",
                           evidence=evidence)
