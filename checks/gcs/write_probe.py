from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

_OBJ = "gs://b/ckpt/.tpudoctor-probe-0123"
_DENIED = {"kind": "permission_denied", "message": "denied", "permission": "storage.objects.create",
           "role": "roles/storage.objectUser"}


class WriteProbe(Check):
    """Opt-in (--write-probe): writes one uniquely named object into each checkpoint/log
    directory and deletes it again, reporting both steps; tpudoctor never writes otherwise."""

    id = "GCS-007"
    title = "Checkpoint and log directories accept a write (--write-probe)"
    step = Step.GCS
    requires = ("GCS-004",)
    facts = ("gcs.write_probe", "gcp.identity")
    severity = Severity.HIGH
    docs = "https://cloud.google.com/storage/docs/access-control/iam-permissions"
    examples = (
        Example("written and deleted", {"gcs.write_probe": [{"path": "gs://b/ckpt", "object": _OBJ, "written": True,
                                                             "deleted": True, "write_failure": None,
                                                             "delete_failure": None}]}, Status.PASS),
        Example("write denied", {"gcs.write_probe": [{"path": "gs://b/ckpt", "object": _OBJ, "written": False,
                                                      "deleted": False, "write_failure": _DENIED,
                                                      "delete_failure": None}]}, Status.FAIL),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        probes = facts.require("gcs.write_probe")
        identity = facts.value("gcp.identity") or {}
        evidence = {"probes": probes}
        for probe in probes:
            bucket = probe["object"][5:].split("/", 1)[0]
            if probe.get("write_failure"):
                failure = probe["write_failure"]
                if failure.get("kind") != "permission_denied":
                    return self.error(f"writing {probe['object']} failed: {failure.get('message')}", evidence=evidence)
                return self.fail(f"write to {probe['path']} denied: {failure.get('message')}", evidence=evidence,
                                 remediation=remediation("Grant roles/storage.objectUser on the bucket.",
                                                         gcloud.bucket_role_binding(bucket, identity.get("iam_member"),
                                                                                    "roles/storage.objectUser")))
            if probe.get("delete_failure"):
                failure = probe["delete_failure"]
                return self.fail(f"wrote {probe['object']} but could not delete it: {failure.get('message')}",
                                 evidence=evidence,
                                 remediation=remediation("Checkpoint managers delete old checkpoints: grant "
                                                         "storage.objects.delete (roles/storage.objectUser), then "
                                                         "remove the probe object.",
                                                         f"gcloud storage rm {probe['object']}"))
        done = ", ".join(p["path"] for p in probes)
        return self.passed(f"wrote and deleted a probe object in {done}", evidence=evidence)
