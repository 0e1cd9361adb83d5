from __future__ import annotations

from typing import Any

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step
from tpudoctor.tpu_types import parse_accelerator_type


def _devices(gen: str, n: int, files: int | None = None) -> dict[str, Any]:
    node = "accel" if gen in ("v2", "v3", "v4") else "vfio"
    paths = [f"/dev/accel{i}" if node == "accel" else f"/dev/vfio/{10 + i}" for i in range(n if files is None else files)]
    return {"chips": [{"generation": gen, "pci_address": f"0000:00:0{4 + i}.0"} for i in range(n)],
            "chip_count": n, "generation": gen if n else None, "device_files": paths, "holders": []}


_VM = {"accelerator_type": "v4-8", "is_tpu_vm": True, "node_name": "my-tpu", "zone": "us-central2-b", "project": "p"}


class ChipsMatchAcceleratorType(Check):
    """On a TPU VM, the TPU chips on the PCI bus (and their /dev nodes) match the node's
    accelerator type: generation and count (v4-8 expects 4 chips, v6e-8 expects 8)."""

    id = "NODE-004"
    title = "TPU chips visible match the accelerator type"
    step = Step.NODE
    facts = ("host.tpu_devices", "tpu.node", "metadata.tpu_vm")
    severity = Severity.HIGH
    docs = "https://cloud.google.com/tpu/docs/system-architecture-tpu-vm"
    examples = (
        Example("v4-8 with 4 chips", {"host.tpu_devices": _devices("v4", 4), "metadata.tpu_vm": _VM}, Status.PASS),
        Example("v6e-8 with 8 chips", {"host.tpu_devices": _devices("v6e", 8),
                                       "metadata.tpu_vm": dict(_VM, accelerator_type="v6e-8")}, Status.PASS),
        Example("v4-8 with 3 chips", {"host.tpu_devices": _devices("v4", 3), "metadata.tpu_vm": _VM}, Status.FAIL),
        Example("device nodes missing", {"host.tpu_devices": _devices("v4", 4, files=0), "metadata.tpu_vm": _VM},
                Status.FAIL),
        Example("not a TPU VM", {"host.tpu_devices": _devices("v4", 0)}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        devices = facts.require("host.tpu_devices")
        node = facts.value("tpu.node") or {}
        vm = facts.value("metadata.tpu_vm") or {}
        on_tpu_vm = bool(vm.get("is_tpu_vm"))
        found = int(devices.get("chip_count") or 0)
        if not found and not on_tpu_vm:
            return self.skip("not running on a TPU VM (no TPU chips on the PCI bus, no TPU metadata): "
                             "chips are counted on the TPU VM itself")
        accelerator_type = node.get("accelerator_type") or vm.get("accelerator_type")
        shape = parse_accelerator_type(accelerator_type)
        files = devices.get("device_files") or []
        evidence: dict[str, Any] = {
            "accelerator_type": accelerator_type, "chips_found": found, "generation_found": devices.get("generation"),
            "device_files": files, "pci_addresses": [c.get("pci_address") for c in devices.get("chips", [])],
        }
        name = node.get("name") or vm.get("node_name")
        zone, project = node.get("zone") or vm.get("zone"), node.get("project") or vm.get("project")
        recreate = remediation(
            "The VM does not see its TPU chips; this does not heal by itself. Delete and recreate the node "
            "(a stop/start can leave /dev/accel* missing).",
            gcloud.tpu_vm("delete", name, zone, project, "--quiet"),
            gcloud.tpu_vm_create({"name": name, "zone": zone, "project": project,
                                  "accelerator_type": accelerator_type,
                                  "runtime_version": node.get("runtime_version") or vm.get("runtime_version")}))
        if shape is None:
            if not found:
                return self.fail("this TPU VM has no TPU chips on its PCI bus", evidence=evidence, remediation=recreate)
            return self.passed(f"{found} {devices.get('generation') or 'TPU'} chip(s) visible "
                               f"(accelerator type {accelerator_type or 'unknown'}: count not compared)",
                               evidence=evidence)
        expected = shape.chips_per_host
        evidence.update({"chips_expected_per_host": expected, "hosts": shape.hosts,
                         "generation_expected": shape.generation.name})
        if found and devices.get("generation") and devices["generation"] != shape.generation.name:
            return self.fail(f"the chips are {devices['generation']} but the node is {accelerator_type} "
                             f"({shape.generation.name})", evidence=evidence, remediation=recreate)
        if found != expected:
            return self.fail(f"{found} of {expected} {shape.generation.name} chips visible on this host "
                             f"({accelerator_type})", evidence=evidence, remediation=recreate)
        if len(files) < found:
            return self.fail(f"{found} chips on the PCI bus but only {len(files)} device node(s) in /dev: the TPU "
                             "driver did not create them", evidence=evidence, remediation=recreate)
        return self.passed(f"{found} {shape.generation.name} chips visible, as {accelerator_type} expects per host",
                           evidence=evidence)
