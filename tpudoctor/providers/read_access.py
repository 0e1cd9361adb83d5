"""The ``logs.*_access`` facts: could this identity read Cloud Logging / Cloud Monitoring at all?

A 403 is a finding about the user's IAM (LOGS-005 turns it into a FAIL with the role and the
gcloud command), not a broken gathering, so it is recorded as data rather than as a GatherError.
"""

from __future__ import annotations

from typing import Any

from tpudoctor.gcp.credentials import Identity
from tpudoctor.gcp.errors import ApiFailure


def readable(service: str) -> dict[str, Any]:
    return {"service": service, "readable": True}


def denied(service: str, failure: ApiFailure, *, project: str, identity: Identity) -> dict[str, Any]:
    """``identity`` is who the client called as: the member the grant must name (None when unknown)."""
    return {"service": service, "readable": False, "project": project, "iam_member": identity.iam_member,
            "identity": identity.to_dict(), "failure": failure.to_dict()}


def no_credentials(failure: ApiFailure) -> str:
    """Why a service could not be asked at all: nobody to call it as, and how to fix that."""
    return (f"no Google Cloud credentials ({failure.message}); run 'gcloud auth application-default login', "
            "or run on a VM with a service account")
