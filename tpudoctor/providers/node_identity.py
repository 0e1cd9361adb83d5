"""Which TPU node this run is about: the target (flags, environment, config, else the metadata server's:
``tpu.target``), then step 1's facts, then the metadata server's.

Shared by the providers that query Cloud Logging and Cloud Monitoring for the node.
"""

from __future__ import annotations

from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts

NODE_FACTS = ("tpu.target", "tpu.node", "metadata.tpu_vm")


def resolve_node_identity(ctx: RunContext, facts: Facts) -> dict[str, Any]:
    """``{"project", "zone", "node_id", "worker_id"}``; values are None where nothing says."""
    node = facts.value("tpu.node") or {}
    vm = facts.value("metadata.tpu_vm") or {}
    tpu_env = vm.get("tpu_env") or {}
    target = facts.value("tpu.target") or {}
    given = ctx.target
    return {
        "project": target.get("project") or given.project or node.get("project") or vm.get("project"),
        "zone": target.get("zone") or given.zone or node.get("zone") or vm.get("zone") or tpu_env.get("ZONE"),
        "node_id": target.get("tpu") or given.tpu or node.get("name") or tpu_env.get("NODE_ID"),
        # Only an explicit --worker narrows the query: on a multi-host slice the first error is
        # often on another worker than this one.
        "worker_id": given.worker,
    }
