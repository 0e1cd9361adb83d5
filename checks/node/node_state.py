from __future__ import annotations

from typing import Any

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.cloud_knowledge.iam import ADC_SETUP_COMMANDS, ROLE_FOR_PERMISSION
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Remediation, Severity, Status, Step

_BASE = {"project": "p", "zone": "us-central2-b", "tpu": "my-tpu", "found": True, "failure": None,
         "resource_name": "projects/p/locations/us-central2-b/nodes/my-tpu", "endpoint": "https://tpu.googleapis.com",
         "zone_nodes": None, "unsupported_reason": None, "identity": None}
_NODE = {"name": "my-tpu", "project": "p", "zone": "us-central2-b", "state": "READY", "accelerator_type": "v4-8",
         "runtime_version": "tpu-vm-tf-2.16.1-pjrt", "spot": False, "preemptible": False}


def _lookup(**changes: Any) -> dict[str, Any]:
    node = dict(_NODE, **changes.pop("node", {}))
    return dict(_BASE, node=node, **changes)


# state -> (verdict, what to do, severity, command verbs). Every state has its own next step.
_STATES: dict[str, tuple[str, str, Severity, tuple[str, ...]]] = {
    "CREATING": ("is still being created", "Wait until it is READY (usually a few minutes), then rerun the job.",
                 Severity.MEDIUM, ("describe",)),
    "STARTING": ("is starting", "Wait until it is READY, then rerun the job.", Severity.MEDIUM, ("describe",)),
    "RESTARTING": ("is restarting", "Wait until it is READY, then rerun the job.", Severity.MEDIUM, ("describe",)),
    "REIMAGING": ("is being reimaged (its runtime version is changing)",
                  "Wait until it is READY; anything on its boot disk is gone, so reinstall your code.",
                  Severity.MEDIUM, ("describe",)),
    "STOPPING": ("is stopping", "Wait until it is STOPPED, then start it.", Severity.HIGH, ("describe", "start")),
    "STOPPED": ("is stopped", "Start the node (billing resumes), then rerun the job.", Severity.HIGH, ("start",)),
    "DELETING": ("is being deleted", "Recreate the node once the deletion finishes.", Severity.CRITICAL,
                 ("create",)),
    "REPAIRING": ("is being repaired by Google Cloud and may be unusable",
                  "Wait for the repair; if the node stays REPAIRING or ends UNKNOWN, delete and recreate it.",
                  Severity.HIGH, ("describe",)),
    "PREEMPTED": ("was preempted: its spot/preemptible capacity was reclaimed",
                  "A preempted node cannot be restarted. Delete and recreate it, then resume training from "
                  "the last checkpoint in GCS.", Severity.CRITICAL, ("delete", "create")),
    "TERMINATED": ("was terminated (maintenance, or the end of a preemptible node's life cycle)",
                   "Delete and recreate the node, then resume from the last checkpoint in GCS.",
                   Severity.CRITICAL, ("delete", "create")),
    "HIDING": ("is being hidden by the TPU service",
               "The node is going out of service (its capacity is reclaimed); wait for it to come back "
               "(UNHIDING, then READY) or check its queued resource.", Severity.HIGH, ("describe",)),
    "HIDDEN": ("is hidden by the TPU service and cannot run work",
               "Wait for it to be unhidden, or check the queued resource it belongs to; recreate it if "
               "you need the capacity now.", Severity.HIGH, ("describe",)),
    "UNHIDING": ("is being unhidden", "Wait until it is READY, then rerun the job.", Severity.MEDIUM, ("describe",)),
    "UNKNOWN": ("is in an unknown state after a failed repair", "Delete and recreate the node.",
                Severity.CRITICAL, ("delete", "create")),
    "STATE_UNSPECIFIED": ("reports no state", "Describe the node; if it stays without a state, recreate it.",
                          Severity.HIGH, ("describe",)),
}


class NodeExistsAndReady(Check):
    """The TPU node exists in the Cloud TPU API and is READY; any other state, or an API
    failure (403, 404, no credentials), is reported with the next step to take."""

    id = "NODE-001"
    title = "TPU node exists and is READY"
    step = Step.NODE
    facts = ("tpu.lookup", "options.checkpoint_dirs")
    severity = Severity.CRITICAL
    timeout_s = 5.0
    docs = "https://cloud.google.com/tpu/docs/managing-tpus-tpu-vm"
    examples = (
        Example("ready node", {"tpu.lookup": _lookup(), "options.checkpoint_dirs": []}, Status.PASS),
        Example("preempted spot node", {"tpu.lookup": _lookup(node={"state": "PREEMPTED", "spot": True}),
                                        "options.checkpoint_dirs": ["gs://b/ckpt"]}, Status.FAIL),
        Example("stopped node", {"tpu.lookup": _lookup(node={"state": "STOPPED"}), "options.checkpoint_dirs": []},
                Status.FAIL),
        Example("not found", {"tpu.lookup": dict(_BASE, found=False, zone_nodes=["other-tpu"],
                                                 failure={"kind": "not_found", "message": "not found",
                                                          "http_status": 404, "permission": None, "attempts": 1}),
                              "options.checkpoint_dirs": []}, Status.FAIL),
        Example("API 503 after retries", {"tpu.lookup": dict(_BASE, found=False, failure={
            "kind": "server_error", "message": "unavailable", "http_status": 503, "permission": None, "attempts": 3}),
            "options.checkpoint_dirs": []}, Status.ERROR),
        Example("TPU7x", {"tpu.lookup": dict(_BASE, found=False, unsupported_reason="this is a tpu7x-8 VM"),
                          "options.checkpoint_dirs": []}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        lookup = facts.require("tpu.lookup")
        if lookup.get("unsupported_reason"):
            return self.skip(f"{lookup['unsupported_reason']}; check it with "
                             f"'gcloud compute instances list --project {lookup['project']}' instead")
        if lookup.get("failure"):
            return self._api_failure(lookup)
        node = lookup["node"]
        state = node.get("state") or "STATE_UNSPECIFIED"
        evidence = {k: node.get(k) for k in ("name", "zone", "project", "state", "accelerator_type",
                                             "runtime_version", "spot", "preemptible")}
        identity = lookup.get("identity") or {}
        evidence["api_identity"] = identity.get("principal") or identity.get("source")
        where = f"{node['name']} ({node.get('accelerator_type') or 'unknown type'}, {node['zone']})"
        if state == "READY":
            return self.passed(f"{where} is READY", evidence=evidence)
        verdict, todo, severity, verbs = _STATES.get(
            state, (f"is in state {state}", "Describe the node and act on its state.", Severity.HIGH, ("describe",)))
        return self.fail(f"{where} {verdict} (state {state})", evidence=evidence, severity=severity,
                         remediation=self._fix(node, todo, verbs, facts.value("options.checkpoint_dirs") or []))

    def _fix(self, node: dict[str, Any], todo: str, verbs: tuple[str, ...], checkpoint_dirs: list[str]) -> Remediation:
        commands = []
        for verb in verbs:
            if verb == "create":
                commands.append(gcloud.tpu_vm_create(node))
            elif verb == "describe":
                commands.append(gcloud.tpu_vm("describe", node["name"], node["zone"], node["project"],
                                              "--format='value(state,health)'"))
            else:
                commands.append(gcloud.tpu_vm(verb, node["name"], node["zone"], node["project"],
                                              *(["--quiet"] if verb == "delete" else [])))
        if "create" in verbs:
            if checkpoint_dirs:
                todo += f" Restore from {', '.join(checkpoint_dirs)}."
            else:
                todo += (" No checkpoint directory was given (--checkpoint-dir): if the job did not save "
                         "checkpoints to GCS, training restarts from scratch.")
        return remediation(todo, *commands)

    def _api_failure(self, lookup: dict[str, Any]) -> CheckResult:
        failure = lookup["failure"]
        kind = failure["kind"]
        project, zone, tpu = lookup["project"], lookup["zone"], lookup["tpu"]
        identity = (lookup.get("identity") or {})
        evidence = {"resource_name": lookup["resource_name"], "endpoint": lookup["endpoint"], "failure": failure,
                    "api_identity": identity.get("principal") or identity.get("source") or "none"}
        if kind == "not_found":
            others = lookup.get("zone_nodes")
            if others:
                listing = f"nodes in {zone}: {', '.join(others)}"
            elif others == []:
                listing = f"there are no TPU nodes in {zone}"
            else:
                listing = "the zone's nodes could not be listed"
            evidence["zone_nodes"] = others
            return self.fail(
                f"no TPU node named {tpu} in zone {zone} of project {project}; {listing}", evidence=evidence,
                remediation=remediation(
                    "Check the name, zone and project (--tpu, --zone, --project), or create the node. "
                    "TPU7x (Ironwood) nodes are not served by the Cloud TPU API: list those with "
                    "'gcloud compute instances list'.",
                    gcloud.tpu_vm("list", None, zone, project),
                    gcloud.tpu_vm_create({"name": tpu, "zone": zone, "project": project})))
        if kind == "permission_denied":
            permission = failure.get("permission") or "tpu.nodes.get"
            role = failure.get("role") or ROLE_FOR_PERMISSION.get(permission, "roles/tpu.viewer")
            who = identity.get("principal") or "the caller"
            return self.fail(
                f"permission denied reading TPU node {tpu}: {who} lacks {permission} (granted by {role})",
                evidence=evidence, severity=Severity.HIGH,
                remediation=remediation(
                    f"Grant {role} on project {project} to the identity tpudoctor runs as.",
                    gcloud.project_role_binding(project, identity.get("iam_member"), role)))
        if kind == "no_credentials":
            return self.fail(
                f"no Google Cloud credentials to call the Cloud TPU API: {failure['message']}",
                evidence=evidence, severity=Severity.HIGH,
                remediation=remediation("Set up Application Default Credentials (or run on the TPU VM).",
                                        *ADC_SETUP_COMMANDS))
        attempts = failure.get("attempts", 1)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        described = {
            "rate_limited": f"the Cloud TPU API kept answering HTTP 429 (rate limited){tries}",
            "server_error": f"the Cloud TPU API answered HTTP {failure.get('http_status')}{tries}",
            "timeout": "the Cloud TPU API did not answer in time (raise --api-timeout if the network is slow)",
            "unreachable": f"cannot reach the Cloud TPU API at {lookup['endpoint']}",
        }.get(kind, f"the Cloud TPU API call failed ({kind})")
        return self.error(f"could not read node {tpu}: {described}: {failure['message']}", evidence=evidence)
