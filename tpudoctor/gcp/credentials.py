"""Who a Google API call is made as (``Identity``), and where Application Default Credentials live.

The session (``tpudoctor.gcp.session``) decides which credentials each endpoint gets; this module only
names them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def is_local_endpoint(endpoint: str | None) -> bool:
    """An ``http://`` endpoint: a local fake or emulator, called without credentials."""
    return endpoint is not None and endpoint.lower().startswith("http://")


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


def adc_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """``GOOGLE_APPLICATION_CREDENTIALS`` (as given), else gcloud's application-default file where it exists."""
    environ = os.environ if environ is None else environ
    explicit = environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if explicit:
        return Path(explicit)
    config = environ.get("CLOUDSDK_CONFIG") or str(Path(environ.get("HOME") or Path.home()) / ".config" / "gcloud")
    path = Path(config) / "application_default_credentials.json"
    return path if path.is_file() else None
