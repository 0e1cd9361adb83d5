"""Which endpoint and which credentials each Google API call uses, and who that identity is.

``http://`` endpoints are local fakes or emulators: they get anonymous credentials. Otherwise
Application Default Credentials, looked up without google-auth's own metadata probe when we
already know there is no metadata server (that probe can take seconds off Google Cloud).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from tpudoctor.gcp.errors import NO_CREDENTIALS, ApiCallFailed, ApiFailure

TPU_ENDPOINT_ENV = "TPUDOCTOR_TPU_ENDPOINT"
STORAGE_ENDPOINT_ENV = "STORAGE_EMULATOR_HOST"


def tpu_endpoint() -> str | None:
    return os.environ.get(TPU_ENDPOINT_ENV, "").strip() or None


def storage_endpoint() -> str | None:
    return os.environ.get(STORAGE_ENDPOINT_ENV, "").strip() or None


def on_google_cloud_vm() -> bool:
    """A Google Cloud VM (TPU VMs included) says so in its DMI product name; no network probe."""
    try:
        with open("/sys/class/dmi/id/product_name", encoding="utf-8") as handle:
            return handle.read().strip().startswith("Google")
    except OSError:
        return False


def is_local_endpoint(endpoint: str | None) -> bool:
    return bool(endpoint) and endpoint.lower().startswith("http://")


@dataclasses.dataclass(frozen=True)
class Identity:
    principal: str | None
    """An email where known (service account), else None."""
    kind: str
    """service_account | user | anonymous | unknown"""
    source: str
    """Where the credentials came from, in words."""

    @property
    def iam_member(self) -> str | None:
        if not self.principal:
            return None
        return f"{'user' if self.kind == 'user' else 'serviceAccount'}:{self.principal}"

    def to_dict(self) -> dict[str, Any]:
        return {"principal": self.principal, "kind": self.kind, "source": self.source, "iam_member": self.iam_member}


def _adc_file() -> Path | None:
    explicit = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if explicit:
        return Path(explicit)
    config = os.environ.get("CLOUDSDK_CONFIG") or str(Path.home() / ".config" / "gcloud")
    path = Path(config) / "application_default_credentials.json"
    return path if path.is_file() else None


def resolve_credentials(
    endpoint: str | None, *, on_gce: bool, metadata_email: str | None = None
) -> tuple[Any, Identity]:
    """(credentials, identity) for a client; raises ApiCallFailed(no_credentials) with the fix."""
    if is_local_endpoint(endpoint):
        from google.auth.credentials import AnonymousCredentials

        return AnonymousCredentials(), Identity(None, "anonymous", f"anonymous (local endpoint {endpoint})")
    adc_file = _adc_file()
    if adc_file is None and not on_gce:
        raise ApiCallFailed(ApiFailure(
            NO_CREDENTIALS,
            "no Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, "
            "there is no gcloud application-default credentials file and this is not a Google Cloud VM",
        ))
    import google.auth
    from google.auth import exceptions as auth_exc

    try:
        credentials, _project = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    except auth_exc.DefaultCredentialsError as exc:
        raise ApiCallFailed(ApiFailure(NO_CREDENTIALS, str(exc).splitlines()[0])) from exc
    email = getattr(credentials, "service_account_email", None)
    if email in (None, "default"):
        email = metadata_email if on_gce and adc_file is None else None
    if email:
        source = "the VM's service account (metadata server)" if adc_file is None else f"service account key {adc_file}"
        return credentials, Identity(email, "service_account", source)
    if adc_file is not None:
        account = getattr(credentials, "account", None) or None
        return credentials, Identity(account, "user", f"user credentials from {adc_file}")
    return credentials, Identity(None, "unknown", type(credentials).__name__)
