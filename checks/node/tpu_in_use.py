from __future__ import annotations

import shlex
from typing import Any

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

_FREE = {"chip_count": 4, "chips": [{}] * 4, "device_files": ["/dev/accel0"], "holders": [],
         "unreadable_processes": 0, "lockfile": {"path": "/tmp/libtpu_lockfile", "exists": False}}
_HELD = dict(_FREE, holders=[{"pid": 4242, "cmdline": "python3 train.py", "files": ["/dev/accel0"]}],
             lockfile={"path": "/tmp/libtpu_lockfile", "exists": True})


class TpuNotHeldByAnotherProcess(Check):
    """No other process holds the TPU devices (/dev/accel*, /dev/vfio/*) or the libtpu lockfile:
    only one process per VM can open the TPU, so a leftover job makes a new one fail to start."""

    id = "NODE-005"
    title = "TPU is not held by another process"
    step = Step.NODE
    facts = ("host.tpu_devices",)
    severity = Severity.HIGH
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/trouble-tf"
    examples = (
        Example("free", {"host.tpu_devices": _FREE}, Status.PASS),
        Example("held by a leftover job", {"host.tpu_devices": _HELD}, Status.FAIL),
        Example("no TPU here", {"host.tpu_devices": dict(_FREE, chip_count=0, chips=[])}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        devices = facts.require("host.tpu_devices")
        if not devices.get("chip_count"):
            return self.skip("no TPU chips on this machine: device holders are checked on the TPU VM itself")
        holders: list[dict[str, Any]] = devices.get("holders") or []
        lockfile = devices.get("lockfile") or {}
        evidence = {"holders": holders, "lockfile": lockfile,
                    "unreadable_processes": devices.get("unreadable_processes", 0)}
        if not holders:
            note = ""
            if devices.get("unreadable_processes"):
                note = f" ({devices['unreadable_processes']} processes of other users could not be inspected; run as root to see them)"
            return self.passed(f"no process holds the TPU{note}", evidence=evidence)
        named = "; ".join(f"PID {h['pid']} ({h['cmdline']}) holds {', '.join(h['files'])}" for h in holders)
        commands = [f"kill {' '.join(str(h['pid']) for h in holders)}"]
        if lockfile.get("exists"):
            commands.append(f"rm -f {shlex.quote(lockfile['path'])}")
        return self.fail(
            f"the TPU is in use: {named}", evidence=evidence,
            remediation=remediation(
                "If that is a leftover or hung job, end it (and remove the stale libtpu lockfile) before "
                "starting a new one; if it is your running job, wait for it to finish.", *commands))
