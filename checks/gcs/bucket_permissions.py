from __future__ import annotations

from typing import Any

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.cloud_knowledge.iam import READ_PERMISSIONS
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

READ_ROLE = "roles/storage.objectViewer"
WRITE_ROLE = "roles/storage.objectUser"

_ALL = ["storage.objects.create", "storage.objects.delete", "storage.objects.get", "storage.objects.list"]
_ID = {"principal": "tpu-sa@p.iam.gserviceaccount.com", "kind": "service_account",
       "source": "the VM's service account (metadata server)", "iam_member": "serviceAccount:tpu-sa@p.iam.gserviceaccount.com"}


def _b(granted: list[str], roles: list[str]) -> dict[str, Any]:
    wanted = _ALL if "checkpoint" in roles else ["storage.objects.get", "storage.objects.list"]
    return {"b": {"bucket": "b", "exists": True, "roles": roles, "paths": ["gs://b/x"], "permissions_wanted": wanted,
                  "permissions_granted": granted, "permissions_missing": [p for p in wanted if p not in granted]}}


class BucketPermissions(Check):
    """The identity the job runs as can read each bucket (storage.objects.get and .list) and
    write where checkpoints and logs go (storage.objects.create and .delete), tested with
    ``test_iam_permissions``; names the role to grant and the command that grants it."""

    id = "GCS-004"
    title = "Bucket permissions for reading data and writing checkpoints"
    step = Step.GCS
    requires = ("GCS-002",)
    facts = ("gcs.buckets", "gcp.identity", "tpu.node", "metadata.tpu_vm")
    severity = Severity.CRITICAL
    docs = "https://cloud.google.com/storage/docs/access-control/iam-roles"
    examples = (
        Example("all granted", {"gcs.buckets": _b(_ALL, ["checkpoint", "data"]), "gcp.identity": _ID}, Status.PASS),
        Example("list missing", {"gcs.buckets": _b(["storage.objects.get"], ["data"]), "gcp.identity": _ID}, Status.FAIL),
        Example("cannot write checkpoints", {"gcs.buckets": _b(["storage.objects.get", "storage.objects.list"],
                                                               ["checkpoint"]), "gcp.identity": _ID}, Status.FAIL),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        buckets = facts.require("gcs.buckets")
        identity = facts.value("gcp.identity") or {}
        node = facts.value("tpu.node") or {}
        vm = facts.value("metadata.tpu_vm") or {}
        # The job runs as the TPU VM's service account, whoever runs tpudoctor.
        job_sa = vm.get("service_account_email") or node.get("service_account")
        member = f"serviceAccount:{job_sa}" if job_sa else identity.get("iam_member")
        tested_as = identity.get("principal") or identity.get("source") or "unknown identity"
        evidence: dict[str, Any] = {"tested_as": tested_as, "job_identity": job_sa, "buckets": {}}
        gaps: list[tuple[str, list[str], str]] = []
        errors = []
        for name, info in buckets.items():
            if not info.get("exists"):
                continue
            if info.get("permissions_failure"):
                errors.append((name, info["permissions_failure"]))
                continue
            missing = info.get("permissions_missing") or []
            evidence["buckets"][name] = {"roles": info.get("roles"), "granted": info.get("permissions_granted"),
                                         "missing": missing}
            if missing:
                role = READ_ROLE if set(missing) <= set(READ_PERMISSIONS) else WRITE_ROLE
                gaps.append((name, missing, role))
        if gaps:
            what = "; ".join(f"gs://{n} lacks {', '.join(m)}" for n, m, _ in gaps)
            caller = f" (tested as {tested_as}" + (f"; the job runs as {job_sa}" if job_sa and job_sa != identity.get("principal") else "") + ")"
            roles = ", ".join(dict.fromkeys(f"{r} on gs://{n}" for n, _, r in gaps))
            return self.fail(
                f"{what}{caller}", evidence=evidence,
                remediation=remediation(
                    f"Grant {roles} to {member or 'the service account the job runs as'} "
                    f"({READ_ROLE} reads objects; {WRITE_ROLE} also creates and deletes them).",
                    *(gcloud.bucket_role_binding(n, member, r) for n, _, r in gaps)))
        if errors:
            name, failure = errors[0]
            return self.error(f"could not test permissions on gs://{name}: {failure.get('kind')}: "
                              f"{failure.get('message')}", evidence=evidence)
        if not evidence["buckets"]:
            return self.skip("no existing bucket to test")
        return self.passed(f"read{' and write' if any('checkpoint' in (i.get('roles') or []) or 'log' in (i.get('roles') or []) for i in buckets.values()) else ''} "
                           f"permissions granted on {', '.join('gs://' + n for n in evidence['buckets'])} "
                           f"(tested as {tested_as})", evidence=evidence)
