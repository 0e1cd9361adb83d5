"""The TPU node as the Cloud TPU API v2 sees it, with API failures kept as data for the checks.

``tpu.lookup`` says what happened (found, not found with the zone's nodes, an API failure,
TPU7x not served); ``tpu.node`` is the node itself for checks and other steps (contracts.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.cloud_knowledge.failures import NOT_FOUND
from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.gcp.errors import ApiCallFailed
from tpudoctor.gcp.tpu_api import node_resource_name
from tpudoctor.provider import FactProvider
from tpudoctor.tpu_types import is_tpu_api_unsupported

NO_TARGET = ("pass --tpu NAME --zone ZONE --project PROJECT (or set TPU_NAME, CLOUDSDK_COMPUTE_ZONE, "
             "CLOUDSDK_CORE_PROJECT), or run tpudoctor on the TPU VM")


class TpuNodeProvider(FactProvider):
    name = "tpu_api"
    provides = ("tpu.lookup", "tpu.node", "tpu.queued_resource")
    needs = ("tpu.target", "metadata.tpu_vm", "host.tpu_devices")
    timeout_s = 120.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        target = facts.value("tpu.target") or {}
        vm = facts.value("metadata.tpu_vm") or {}
        devices = facts.value("host.tpu_devices") or {}
        project, zone, tpu = target.get("project"), target.get("zone"), target.get("tpu")
        missing = [flag for flag, value in (("--tpu", tpu), ("--zone", zone), ("--project", project)) if not value]
        if missing or not (project and zone and tpu):
            why = Unavailable(f"no TPU node to look up (missing {', '.join(missing)}): {NO_TARGET}")
            return {"tpu.lookup": why, "tpu.node": why, "tpu.queued_resource": why}

        cloud = ctx.cloud
        lookup: dict[str, Any] = {
            "project": project, "zone": zone, "tpu": tpu,
            "resource_name": node_resource_name(project, zone, tpu),
            "endpoint": cloud.endpoints.tpu_url,
            "found": False, "failure": None, "zone_nodes": None, "zone_nodes_failure": None,
            "unsupported_reason": None, "identity": None,
        }
        local_type = vm.get("accelerator_type") or ("tpu7x" if devices.get("generation") == "tpu7x" else None)
        if is_tpu_api_unsupported(local_type):
            lookup["unsupported_reason"] = (
                f"this is a {local_type} VM; the Cloud TPU API does not serve TPU7x and later, which are "
                "managed through Compute Engine or GKE")
            why = Unavailable(lookup["unsupported_reason"])
            return {"tpu.lookup": lookup, "tpu.node": why, "tpu.queued_resource": why}

        try:
            api = cloud.tpu
            lookup["identity"] = api.identity.to_dict()
            node = api.get_node(project, zone, tpu)
        except ApiCallFailed as exc:
            lookup["failure"] = exc.failure.to_dict()
            if exc.failure.kind == NOT_FOUND:
                try:
                    lookup["zone_nodes"] = api.list_node_names(project, zone)
                except ApiCallFailed as list_exc:
                    lookup["zone_nodes_failure"] = list_exc.failure.to_dict()
            why = Unavailable(f"the TPU node {tpu} could not be read: {exc.failure.message}")
            short = Unavailable(f"the TPU node {tpu} could not be read (see NODE-001)")
            return {"tpu.lookup": lookup, "tpu.node": why, "tpu.queued_resource": short}

        lookup["found"] = True
        lookup["node"] = node
        queued: Any = None
        if node.get("queued_resource"):
            try:
                queued = api.get_queued_resource(node["queued_resource"])
            except ApiCallFailed as exc:
                queued = {"name": node["queued_resource"], "failure": exc.failure.to_dict()}
        return {"tpu.lookup": lookup, "tpu.node": node, "tpu.queued_resource": queued}
