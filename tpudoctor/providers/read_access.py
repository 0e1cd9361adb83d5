"""The ``logs.*_access`` facts: could this identity read Cloud Logging / Cloud Monitoring at all?

A 403 is a finding about the user's IAM (LOGS-005 turns it into a FAIL with the role and the
gcloud command), not a broken gathering, so it is recorded as data rather than as a GatherError.
"""

from __future__ import annotations

from typing import Any

from tpudoctor.facts import Facts
from tpudoctor.gcp.errors import ApiFailure


def readable(service: str) -> dict[str, Any]:
    return {"service": service, "readable": True}


def denied(service: str, failure: ApiFailure, *, project: str, facts: Facts) -> dict[str, Any]:
    return {"service": service, "readable": False, "project": project, "iam_member": iam_member(facts),
            "failure": failure.to_dict()}


def iam_member(facts: Facts) -> str | None:
    """Who was refused, where known: the credentials tpudoctor used, else the VM's service account."""
    identity = facts.value("gcp.identity") or {}
    if identity.get("iam_member"):
        return identity["iam_member"]
    email = (facts.value("metadata.tpu_vm") or {}).get("service_account_email")
    return f"serviceAccount:{email}" if email and email != "default" else None
