"""Google Cloud resource names as GCP itself accepts them, checked before any of them reaches a command
line or an API path.

A TPU name, a zone or a project read from a flag, ``TPU_NAME``/``CLOUDSDK_*`` or the config file becomes
an argument of ``gcloud compute tpus tpu-vm ssh`` and a path segment of an API call; a value such as
``--ssh-flag=-oProxyCommand=...`` would be read by gcloud as a flag. GCP's own rule (RFC 1035 labels:
a lowercase letter first, then lowercase letters, digits and hyphens, at most 63, no hyphen last) leaves
no such value through; a worker is a number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tpudoctor.errors import UsageError

_LABEL = r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?"
RESOURCE_NAME = re.compile(rf"{_LABEL}\Z")
PROJECT_ID = re.compile(rf"(?:[a-z0-9](?:[a-z0-9.-]{{0,61}}[a-z0-9])?:)?{_LABEL}\Z")
"""A project id, or a legacy domain-scoped one (``example.com:my-project``)."""
WORKER_ID = re.compile(r"[0-9]{1,4}\Z")

RULES = {
    "tpu": (RESOURCE_NAME, "TPU name",
            "a lowercase letter first, then lowercase letters, digits and hyphens; at most 63; no hyphen last"),
    "zone": (RESOURCE_NAME, "zone", "a zone such as us-central2-b (lowercase letters, digits and hyphens)"),
    "project": (PROJECT_ID, "project id",
                "a lowercase letter first, then lowercase letters, digits and hyphens; at most 63"),
    "worker": (WORKER_ID, "worker", "a worker number such as 0 or 3"),
    # Kubernetes names (RFC 1123 labels) for a GKE workload's Cloud Logging filter.
    "gke_cluster": (RESOURCE_NAME, "GKE cluster name", "a lowercase letter first, then lowercase letters, digits and "
                    "hyphens; at most 63"),
    "gke_namespace": (re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\Z"), "Kubernetes namespace",
                      "lowercase letters, digits and hyphens; at most 63"),
    "gke_workload": (re.compile(r"[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?\Z"), "Kubernetes workload name",
                     "lowercase letters, digits, hyphens and dots; at most 253"),
}


def check_resource_name(key: str, value: str | None, *, origin: str) -> str | None:
    """``value`` when it is a valid ``key`` (tpu, zone, project, worker) or empty; a ``UsageError`` naming
    where it came from (``origin``: ``--tpu``, ``TPU_NAME``, the config file) otherwise."""
    if value is None or value == "":
        return value
    pattern, what, rule = RULES[key]
    if not isinstance(value, str) or not pattern.match(value):
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        raise UsageError(f"{what} {shown} (from {origin}) is not a valid Google Cloud {what}",
                         hint=f"a {what} is {rule}")
    return value


def check_target_names(values: Mapping[str, str | None], origins: Mapping[str, str]) -> None:
    """Every name of a target (``tpu``, ``zone``, ``project``, ``worker``) valid, or a ``UsageError``."""
    for key, value in values.items():
        check_resource_name(key, value, origin=origins.get(key, f"--{key}"))
