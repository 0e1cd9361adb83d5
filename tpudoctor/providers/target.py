"""Which TPU node to look at: flags and environment first, then the metadata server on a TPU VM.

A fact, gathered once: the settings' target stays as the user gave it, and the report header names the
node that was actually checked from this fact (``reported_target``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts
from tpudoctor.findings import Target
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
            else:
                resolved[key] = None
        resolved["region"] = region_of(resolved["zone"])
        return {"tpu.target": resolved}


def reported_target(given: Target, facts: Facts) -> Target:
    """The target a report names: the one given, with what the metadata server filled in (``tpu.target``)
    where it was gathered."""
    found = facts.value("tpu.target")
    if not isinstance(found, Mapping):
        return given
    return dataclasses.replace(given, **{key: found.get(key) or getattr(given, key)
                                         for key in ("project", "zone", "tpu")})
