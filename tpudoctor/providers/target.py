"""Which TPU node to look at: flags and environment first, then the metadata server on a TPU VM.

Fills the run's target in place where flags left it empty, so the report header names the
node that was actually checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts
from tpudoctor.provider import FactProvider


def region_of(zone: str | None) -> str | None:
    """``us-central2-b`` -> ``us-central2``."""
    if not zone or zone.count("-") < 2:
        return None
    return zone.rsplit("-", 1)[0]


class TargetProvider(FactProvider):
    name = "target"
    provides = ("tpu.target",)
    needs = ("metadata.tpu_vm",)
    timeout_s = 1.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        vm = facts.value("metadata.tpu_vm") or {}
        target = ctx.target
        resolved: dict[str, Any] = {"sources": {}}
        for key, vm_key in (("project", "project"), ("zone", "zone"), ("tpu", "node_name")):
            given = getattr(target, key)
            if given:
                resolved[key], resolved["sources"][key] = given, "flag, environment or config"
            elif vm.get(vm_key) and (key != "tpu" or vm.get("is_tpu_vm")):
                resolved[key], resolved["sources"][key] = vm[vm_key], "metadata server"
                setattr(target, key, vm[vm_key])
            else:
                resolved[key] = None
        resolved["region"] = region_of(resolved["zone"])
        return {"tpu.target": resolved}
