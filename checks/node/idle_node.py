from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

_NODE = {"name": "my-tpu", "project": "p", "zone": "us-central2-b", "state": "READY", "accelerator_type": "v4-8"}
_IDLE = {"chip_count": 4, "holders": []}
_BUSY = {"chip_count": 4, "holders": [{"pid": 77, "cmdline": "python3 train.py", "files": ["/dev/accel0"]}]}


class ReadyNodeNotIdle(Check):
    """A READY node bills by the second whether or not it runs anything; warns when no process on
    this TPU VM is using the TPU, with the commands to stop or delete it."""

    id = "NODE-006"
    title = "READY node is in use (not billed while idle)"
    step = Step.NODE
    requires = ("NODE-001",)
    facts = ("tpu.node", "host.tpu_devices")
    severity = Severity.LOW
    docs = "https://cloud.google.com/tpu/pricing"
    examples = (
        Example("in use", {"tpu.node": _NODE, "host.tpu_devices": _BUSY}, Status.PASS),
        Example("idle", {"tpu.node": _NODE, "host.tpu_devices": _IDLE}, Status.WARN),
        Example("not on the VM", {"tpu.node": _NODE, "host.tpu_devices": {"chip_count": 0, "holders": []}},
                Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        node = facts.require("tpu.node")
        devices = facts.require("host.tpu_devices")
        if node.get("state") != "READY":
            return self.skip(f"the node is {node.get('state')}, not READY")
        if not devices.get("chip_count"):
            return self.skip("idle detection reads the TPU VM's processes: run tpudoctor on the TPU VM")
        holders = devices.get("holders") or []
        evidence = {"state": node.get("state"), "accelerator_type": node.get("accelerator_type"),
                    "holder_pids": [h["pid"] for h in holders]}
        if holders:
            return self.passed(f"in use by PID {', '.join(str(h['pid']) for h in holders)}", evidence=evidence)
        name, zone, project = node.get("name"), node.get("zone"), node.get("project")
        return self.warn(
            f"{name} is READY but no process on this VM is using the TPU: it is billed while idle",
            evidence=evidence,
            remediation=remediation(
                "Stop the node for a pause (disk kept, chips not billed) or delete it when done.",
                gcloud.tpu_vm("stop", name, zone, project), gcloud.tpu_vm("delete", name, zone, project)))
