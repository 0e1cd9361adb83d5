"""The Cloud TPU API v2 through ``google-cloud-tpu`` (REST transport), as plain dicts.

Built by the session (``Session.tpu``), which chose the endpoint and the credentials. Every call has the
session's timeout and a bounded retry on 429/5xx.
"""

from __future__ import annotations

from typing import Any

from tpudoctor.gcp.credentials import Identity
from tpudoctor.gcp.errors import call_with_retries


def node_resource_name(project: str, zone: str, node: str) -> str:
    return f"projects/{project}/locations/{zone}/nodes/{node}"


class TpuApi:
    def __init__(self, credentials: Any, *, identity: Identity, endpoint: str | None, timeout_s: float,
                 attempts: int = 3, backoff_s: float = 0.25):
        from google.api_core.client_options import ClientOptions
        from google.cloud import tpu_v2

        options = ClientOptions(api_endpoint=endpoint) if endpoint else None
        self._client = tpu_v2.TpuClient(credentials=credentials, transport="rest", client_options=options)
        self.identity = identity
        """Who the calls are made as."""
        self.timeout_s = timeout_s
        self.attempts = attempts
        self.backoff_s = backoff_s

    def _call(self, fn, permission: str):
        return call_with_retries(fn, permission=permission, attempts=self.attempts, backoff_s=self.backoff_s)

    def get_node(self, project: str, zone: str, node: str) -> dict[str, Any]:
        name = node_resource_name(project, zone, node)
        raw = self._call(lambda: self._client.get_node(name=name, timeout=self.timeout_s, retry=None), "tpu.nodes.get")
        return node_to_dict(raw, project=project, zone=zone)

    def list_node_names(self, project: str, zone: str, limit: int = 50) -> list[str]:
        parent = f"projects/{project}/locations/{zone}"

        def fetch() -> list[str]:
            pager = self._client.list_nodes(parent=parent, timeout=self.timeout_s, retry=None)
            names: list[str] = []
            for node in pager:
                names.append(node.name.rsplit("/", 1)[-1])
                if len(names) >= limit:
                    break
            return names

        return self._call(fetch, "tpu.nodes.list")

    def get_queued_resource(self, name: str) -> dict[str, Any]:
        raw = self._call(lambda: self._client.get_queued_resource(name=name, timeout=self.timeout_s, retry=None),
                         "tpu.queuedResources.get")
        state = raw.state
        error = state.failed_data.error if state.failed_data else None
        return {
            "name": raw.name,
            "state": state.state.name,
            "state_initiator": state.state_initiator.name,
            "failed_error": (error.message if error and error.message else None),
        }


def node_to_dict(node: Any, *, project: str, zone: str) -> dict[str, Any]:
    """The contract shape of ``tpu.node`` (see contracts.md), from a ``tpu_v2.Node``."""
    scheduling = node.scheduling_config
    config = node.accelerator_config
    has_config = bool(config and (config.type_ or config.topology))
    return {
        "name": node.name.rsplit("/", 1)[-1],
        "resource_name": node.name,
        "project": project,
        "zone": zone,
        "state": node.state.name,
        "health": node.health.name,
        "health_description": node.health_description or "",
        "symptoms": [
            {
                "type": s.symptom_type.name,
                "description": s.details,
                "worker_id": s.worker_id,
                "create_time": s.create_time.isoformat() if s.create_time else None,
            }
            for s in node.symptoms
        ],
        "accelerator_type": node.accelerator_type or None,
        "accelerator_config": {"type": config.type_.name, "topology": config.topology} if has_config else None,
        "runtime_version": node.runtime_version or None,
        "preemptible": bool(scheduling and scheduling.preemptible),
        "spot": bool(scheduling and scheduling.spot),
        "reserved": bool(scheduling and scheduling.reserved),
        "network_endpoints": [
            {"ip_address": e.ip_address, "port": e.port,
             "external_ip": e.access_config.external_ip if e.access_config else None}
            for e in node.network_endpoints
        ],
        "service_account": node.service_account.email if node.service_account else None,
        "labels": dict(node.labels),
        "queued_resource": node.queued_resource or None,
        "create_time": node.create_time.isoformat() if node.create_time else None,
        "api_version": node.api_version.name,
    }
