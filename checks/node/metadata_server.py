from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts, GatherError, Unavailable
from tpudoctor.findings import CheckResult, Severity, Status, Step

_VM = {"project": "p", "zone": "us-central2-b", "instance_name": "t1v-n-0a1b2c3d-w-0", "node_name": "my-tpu",
       "accelerator_type": "v4-8", "agent_worker_number": 0, "worker_network_endpoints": ["10.130.0.2"],
       "is_tpu_vm": True, "metadata_host": "169.254.169.254"}


class MetadataServerAnswers(Check):
    """On a Google Cloud VM, the metadata server answers and describes this VM as a TPU VM worker.

    A broken metadata server (5xx, rate limits, cut-off or garbled answers, no answer on a VM
    whose firmware says Google) is an ERROR here instead of passing for "not on Google Cloud"."""

    id = "NODE-008"
    title = "Metadata server answers and describes a TPU VM"
    step = Step.NODE
    facts = ("metadata.tpu_vm",)
    severity = Severity.MEDIUM
    docs = "https://cloud.google.com/compute/docs/metadata/querying-metadata"
    examples = (
        Example("TPU VM worker", {"metadata.tpu_vm": _VM}, Status.PASS),
        Example("plain GCE VM", {"metadata.tpu_vm": dict(_VM, accelerator_type=None, is_tpu_vm=False,
                                                         node_name=None)}, Status.WARN),
        Example("not on Google Cloud", {"metadata.tpu_vm": Unavailable("not running on a Google Cloud VM")},
                Status.SKIP),
        Example("metadata server broken", {"metadata.tpu_vm": GatherError("metadata", "HTTP 500")}, Status.ERROR),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        vm = facts.require("metadata.tpu_vm")
        evidence = {k: vm.get(k) for k in ("project", "zone", "instance_name", "node_name", "accelerator_type",
                                           "agent_worker_number", "metadata_host")}
        evidence["worker_count"] = len(vm.get("worker_network_endpoints") or [])
        if not vm.get("is_tpu_vm"):
            return self.warn(
                f"{vm.get('instance_name') or 'this VM'} is a Google Cloud VM without TPU attributes: the node "
                "checks that read this machine (chips, processes, libtpu logs) only apply on a TPU VM worker",
                evidence=evidence,
                remediation=remediation(
                    "Run tpudoctor on a worker of the TPU VM (all workers: add --worker=all to the ssh command).",
                    "gcloud compute tpus tpu-vm ssh NAME --zone ZONE --command 'tpudoctor check'"))
        worker = vm.get("agent_worker_number")
        return self.passed(
            f"TPU VM {vm.get('node_name') or '?'} ({vm.get('accelerator_type') or '?'}), worker "
            f"{worker if worker is not None else '?'} of {evidence['worker_count'] or '?'}", evidence=evidence)
