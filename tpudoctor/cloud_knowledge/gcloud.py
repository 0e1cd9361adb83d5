"""Copy-pasteable gcloud commands with the real names filled in (placeholders only when unknown)."""

from __future__ import annotations

import shlex


def _q(value: str | None, placeholder: str) -> str:
    return shlex.quote(value) if value else placeholder


def tpu_vm(verb: str, node: str | None, zone: str | None, project: str | None, *extra: str) -> str:
    """``gcloud compute tpus tpu-vm VERB NAME --zone ZONE --project PROJECT [extra...]``."""
    parts = ["gcloud compute tpus tpu-vm", verb]
    if verb != "list":
        parts.append(_q(node, "TPU_NAME"))
    parts += ["--zone", _q(zone, "ZONE"), "--project", _q(project, "PROJECT")]
    return " ".join(parts + list(extra))


def tpu_vm_create(node: dict, *, spot: bool | None = None) -> str:
    extra = [f"--accelerator-type {_q(node.get('accelerator_type'), 'ACCELERATOR_TYPE')}",
             f"--version {_q(node.get('runtime_version'), 'RUNTIME_VERSION')}"]
    if spot if spot is not None else node.get("spot"):
        extra.append("--spot")
    elif node.get("preemptible"):
        extra.append("--preemptible")
    return tpu_vm("create", node.get("name"), node.get("zone"), node.get("project"), *extra)


def project_role_binding(project: str | None, member: str | None, role: str) -> str:
    return (f"gcloud projects add-iam-policy-binding {_q(project, 'PROJECT')} "
            f"--member={_q(member, 'serviceAccount:SERVICE_ACCOUNT_EMAIL')} --role={role}")


def bucket_role_binding(bucket: str, member: str | None, role: str) -> str:
    return (f"gcloud storage buckets add-iam-policy-binding gs://{bucket} "
            f"--member={_q(member, 'serviceAccount:SERVICE_ACCOUNT_EMAIL')} --role={role}")


def bucket_create(bucket: str, region: str | None, project: str | None) -> str:
    return (f"gcloud storage buckets create gs://{bucket} --location={_q(region, 'REGION')} "
            f"--project={_q(project, 'PROJECT')} --uniform-bucket-level-access")


def report_host_as_faulty(node: str | None, zone: str | None, project: str | None, description: str,
                          behavior: str = "BEHAVIOR_UNSPECIFIED") -> str:
    """Report the host of a TPU VM in All Capacity mode as faulty (Compute Engine repairs it; 3-14 days);
    ``behavior``: ``PERFORMANCE``, ``SILENT_DATA_CORRUPTION`` or ``BEHAVIOR_UNSPECIFIED``. gcloud splits
    ``--fault-reasons`` at commas, so the description has none."""
    description = description.replace(",", ";")
    return (f"gcloud compute instances report-host-as-faulty {_q(node, 'TPU_NAME')} --zone {_q(zone, 'ZONE')} "
            f"--project {_q(project, 'PROJECT')} "
            f"--fault-reasons={shlex.quote(f'behavior={behavior},description={description}')} "
            "--disruption-schedule=IMMEDIATE")


def queued_resource(verb: str, qr: str | None, zone: str | None, project: str | None, *extra: str) -> str:
    return " ".join(["gcloud compute tpus queued-resources", verb, _q(qr, "QUEUED_RESOURCE_ID"),
                     "--zone", _q(zone, "ZONE"), "--project", _q(project, "PROJECT"), *extra])
