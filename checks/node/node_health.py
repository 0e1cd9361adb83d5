from __future__ import annotations

from typing import Any

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step, worst_status

_NODE = {"name": "my-tpu", "project": "p", "zone": "us-central2-b", "state": "READY", "health": "HEALTHY",
         "health_description": "", "symptoms": []}

# health -> (status, meaning, what to do)
_HEALTH = {
    "TIMEOUT": (Status.FAIL, "the node is unresponsive to the TPU health monitor",
                "Check that the VM answers over ssh; if it does not, stop and start the node."),
    "UNHEALTHY_TENSORFLOW": (Status.FAIL, "the ML stack on the VM is unhealthy (the name is historical: it "
                             "applies to JAX and PyTorch too)",
                             "Find and end stale framework processes on every worker, then restart the node "
                             "if the health does not recover."),
    "UNHEALTHY_MAINTENANCE": (Status.WARN, "the node is under maintenance and will resume once rescheduled",
                              "Wait for the maintenance to finish; save checkpoints often so the job can resume."),
}

# symptom type -> (status, meaning, what to do)
_SYMPTOMS = {
    "HBM_OUT_OF_MEMORY": (Status.FAIL, "TPU HBM ran out of memory",
                          "Lower the per-device batch size, enable rematerialization, or shard parameters "
                          "across more chips."),
    "OUT_OF_MEMORY": (Status.FAIL, "the TPU runtime ran out of memory",
                      "Lower the batch size or model size; check for memory leaks across steps."),
    "LOW_MEMORY": (Status.WARN, "the VM (host RAM) is low on memory",
                   "Shrink tf.data shuffle/prefetch buffers and host-side caches."),
    "EXECUTE_TIMED_OUT": (Status.FAIL, "a TPU program did not finish in time",
                          "On multi-host slices start the job on every worker (--worker=all); a collective "
                          "waits forever for a worker that never started."),
    "MESH_BUILD_FAIL": (Status.FAIL, "the TPU mesh could not be built (chips did not find their ICI neighbours)",
                        "Delete and recreate the node; this is a hardware/interconnect fault."),
    "PROJECT_ABUSE": (Status.FAIL, "the project was flagged for abuse",
                      "Contact Google Cloud support; the TPU will not run work until this is resolved."),
}


class NodeHealthAndSymptoms(Check):
    """The node's health from the TPU health monitor is HEALTHY and it reports no symptoms
    (HBM_OUT_OF_MEMORY, MESH_BUILD_FAIL, EXECUTE_TIMED_OUT, ...); the health description is quoted."""

    id = "NODE-002"
    title = "TPU node health and symptoms"
    step = Step.NODE
    requires = ("NODE-001",)
    facts = ("tpu.node",)
    severity = Severity.HIGH
    docs = "https://cloud.google.com/tpu/docs/reference/rest/v2/projects.locations.nodes"
    examples = (
        Example("healthy", {"tpu.node": _NODE}, Status.PASS),
        Example("unhealthy ML stack", {"tpu.node": dict(_NODE, health="UNHEALTHY_TENSORFLOW",
                                                        health_description="TPU runtime unhealthy")}, Status.FAIL),
        Example("maintenance", {"tpu.node": dict(_NODE, health="UNHEALTHY_MAINTENANCE")}, Status.WARN),
        Example("HBM OOM symptom", {"tpu.node": dict(_NODE, symptoms=[
            {"type": "HBM_OUT_OF_MEMORY", "description": "HBM OOM on worker 0", "worker_id": "0"}])}, Status.FAIL),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        node = facts.require("tpu.node")
        health = node.get("health") or "HEALTH_UNSPECIFIED"
        description = (node.get("health_description") or "").strip()
        symptoms = node.get("symptoms") or []
        evidence: dict[str, Any] = {"health": health, "health_description": description, "symptoms": symptoms}
        findings: list[tuple[Status, str, str]] = []
        if health in _HEALTH:
            status, meaning, todo = _HEALTH[health]
            findings.append((status, f"health {health}: {meaning}", todo))
        elif health not in ("HEALTHY", "HEALTH_UNSPECIFIED"):
            findings.append((Status.WARN, f"health {health}", "Describe the node and watch its health."))
        for symptom in symptoms:
            kind = symptom.get("type") or "SYMPTOM_TYPE_UNSPECIFIED"
            status, meaning, todo = _SYMPTOMS.get(kind, (Status.WARN, "an unrecognised symptom", "Describe the node."))
            worker = f" on worker {symptom['worker_id']}" if symptom.get("worker_id") not in (None, "") else ""
            detail = f": \"{symptom['description']}\"" if symptom.get("description") else ""
            findings.append((status, f"symptom {kind}{worker}: {meaning}{detail}", todo))
        if not findings:
            word = "HEALTHY" if health == "HEALTHY" else "no health report (HEALTH_UNSPECIFIED)"
            return self.passed(f"{word}, no symptoms", evidence=evidence)
        worst = worst_status(f[0] for f in findings)
        message = "; ".join(f[1] for f in findings)
        if description:
            message += f"; health description: \"{description}\""
        name, zone, project = node.get("name"), node.get("zone"), node.get("project")
        commands = [gcloud.tpu_vm("describe", name, zone, project,
                                  "--format='yaml(state,health,healthDescription,symptoms)'")]
        if health in ("TIMEOUT", "UNHEALTHY_TENSORFLOW"):
            commands.append(gcloud.tpu_vm("ssh", name, zone, project, "--worker=all",
                                          "--command='sudo lsof -w /dev/accel* /dev/vfio/* 2>/dev/null'"))
            commands += [gcloud.tpu_vm("stop", name, zone, project), gcloud.tpu_vm("start", name, zone, project)]
        fix = remediation(" ".join(dict.fromkeys(f[2] for f in findings)), *commands)
        if worst is Status.FAIL:
            return self.fail(message, evidence=evidence, remediation=fix)
        return self.warn(message, evidence=evidence, remediation=fix)
