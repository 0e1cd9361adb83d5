"""The permissions tpudoctor's calls need, the narrowest predefined role that grants each, and how to
set up credentials."""

from __future__ import annotations

# The narrowest predefined role that grants each permission tpudoctor needs.
ROLE_FOR_PERMISSION = {
    "tpu.nodes.get": "roles/tpu.viewer",
    "tpu.nodes.list": "roles/tpu.viewer",
    "tpu.queuedResources.get": "roles/tpu.viewer",
    "tpu.queuedResources.list": "roles/tpu.viewer",
    "storage.buckets.get": "roles/storage.bucketViewer",
    "storage.objects.get": "roles/storage.objectViewer",
    "storage.objects.list": "roles/storage.objectViewer",
    "storage.objects.create": "roles/storage.objectUser",
    "storage.objects.delete": "roles/storage.objectUser",
    "logging.logEntries.list": "roles/logging.viewer",
    "monitoring.timeSeries.list": "roles/monitoring.viewer",
}

READ_PERMISSIONS = ("storage.objects.get", "storage.objects.list")
"""What reading training data from a bucket needs."""
WRITE_PERMISSIONS = ("storage.objects.create", "storage.objects.delete")
"""What writing checkpoints and logs to a bucket needs."""
LOGGING_PERMISSION = "logging.logEntries.list"
MONITORING_PERMISSION = "monitoring.timeSeries.list"

ADC_SETUP_COMMANDS = (
    "gcloud auth application-default login",
    "export GOOGLE_APPLICATION_CREDENTIALS=/path/to/service-account-key.json",
)
"""How a person gets Application Default Credentials."""


def role_for(permission: str | None) -> str | None:
    return ROLE_FOR_PERMISSION.get(permission or "")
