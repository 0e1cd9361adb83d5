"""A loopback fake of the Cloud TPU API v2 (REST) for the real ``google-cloud-tpu`` client.

>>> with FakeTpuApi() as api:
...     api.add_node(make_node("p", "us-central2-b", "my-tpu", state="PREEMPTED", spot=True))
...     api.fail(429, times=1)              # the next request gets 429, the one after succeeds
...     os.environ["TPUDOCTOR_TPU_ENDPOINT"] = api.url

Serves GetNode, ListNodes and GetQueuedResource; anything else is 404. Errors carry Google's
JSON error body (403s name the permission in an ErrorInfo, as the real API does).
"""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import urlparse

from tpudoctor.testing.loopback import Fault, FaultQueue, LoopbackServer, google_error, send

_NODE = re.compile(r"^/v2/projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes/(?P<n>[^/:]+)$")
_NODES = re.compile(r"^/v2/projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes$")
_QR = re.compile(r"^/v2/projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/queuedResources/(?P<q>[^/:]+)$")


def make_node(project: str, zone: str, name: str, *, state: str = "READY", accelerator_type: str = "v4-8",
              health: str | None = "HEALTHY", health_description: str = "", symptoms: list[dict] | None = None,
              preemptible: bool = False, spot: bool = False, runtime_version: str = "tpu-vm-tf-2.16.1-pjrt",
              service_account: str | None = "tpu-sa@p.iam.gserviceaccount.com", workers: int = 1,
              labels: dict[str, str] | None = None, queued_resource: str | None = None,
              topology: str | None = None) -> dict[str, Any]:
    """A node as the REST API returns it (camelCase JSON, string enums)."""
    node: dict[str, Any] = {
        "name": f"projects/{project}/locations/{zone}/nodes/{name}",
        "acceleratorType": accelerator_type,
        "state": state,
        "runtimeVersion": runtime_version,
        "healthDescription": health_description,
        "networkEndpoints": [{"ipAddress": f"10.130.0.{i + 2}", "port": 8470} for i in range(workers)],
        "schedulingConfig": {"preemptible": preemptible, **({"spot": True} if spot else {})},
        "labels": labels or {},
        "apiVersion": "V2",
        "createTime": "2026-01-01T00:00:00Z",
        "symptoms": [
            {"symptomType": s["type"], "details": s.get("description", ""), "workerId": str(s.get("worker_id", "0")),
             "createTime": "2026-01-01T01:00:00Z"}
            for s in (symptoms or [])
        ],
    }
    if health:
        node["health"] = health
    if service_account:
        node["serviceAccount"] = {"email": service_account, "scope": ["https://www.googleapis.com/auth/cloud-platform"]}
    if topology:
        gen = accelerator_type.split("-")[0].upper().replace("V5LITEPOD", "V5LITE_POD")
        node["acceleratorConfig"] = {"type": gen, "topology": topology}
    if queued_resource:
        node["queuedResource"] = queued_resource
    return node


class FakeTpuApi(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.nodes: dict[str, dict[str, Any]] = {}
        self.queued_resources: dict[str, dict[str, Any]] = {}
        self.faults = FaultQueue()
        self.delay_s = 0.0
        self.requests: list[str] = []

    def add_node(self, node: dict[str, Any]) -> dict[str, Any]:
        self.nodes[node["name"]] = node
        return node

    def add_queued_resource(self, project: str, zone: str, name: str, state: str,
                            failed_error: str | None = None) -> str:
        full = f"projects/{project}/locations/{zone}/queuedResources/{name}"
        qr: dict[str, Any] = {"name": full, "state": {"state": state}}
        if failed_error:
            qr["state"]["failedData"] = {"error": {"code": 8, "message": failed_error}}
        self.queued_resources[full] = qr
        return full

    def fail(self, status: int, *, times: int = 1, path_contains: str | None = None,
             permission: str | None = None, message: str | None = None, delay_s: float = 0.0) -> None:
        """Answer the next ``times`` matching requests with ``status`` (after ``delay_s``)."""
        self.faults.add(Fault(status, times, path_contains, permission, message, delay_s))

    def handle(self, handler, method: str) -> None:
        path = urlparse(handler.path).path
        self.requests.append(f"{method} {path}")
        if self.delay_s:
            time.sleep(self.delay_s)
        fault = self.faults.take(path)
        if fault is not None:
            if fault.delay_s:
                time.sleep(fault.delay_s)
            message = fault.message or (
                f"Permission '{fault.permission}' denied on '{path[4:]}'" if fault.status == 403 and fault.permission
                else f"injected HTTP {fault.status}")
            send(handler, fault.status, google_error(fault.status, message, permission=fault.permission,
                                                     domain="tpu.googleapis.com"))
            return
        if method != "GET":
            send(handler, 404, google_error(404, f"{method} {path} is not served by the fake"))
            return
        if _NODE.match(path):
            node = self.nodes.get(path[4:])
            if node is None:
                send(handler, 404, google_error(404, f"Resource '{path[4:]}' was not found"))
            else:
                send(handler, 200, node)
            return
        if _NODES.match(path):
            prefix = path[4:] + "/"
            send(handler, 200, {"nodes": [n for k, n in sorted(self.nodes.items()) if k.startswith(prefix)]})
            return
        if _QR.match(path):
            qr = self.queued_resources.get(path[4:])
            send(handler, 200, qr) if qr else send(handler, 404, google_error(404, f"Resource '{path[4:]}' was not found"))
            return
        send(handler, 404, google_error(404, f"{path} is not served by the fake"))
