"""A loopback fake of the GCE metadata server, as a TPU VM sees it.

>>> with FakeMetadataServer(tpu_vm_metadata("p", "us-central2-b", "my-tpu", "v4-8")) as md:
...     os.environ["GCE_METADATA_HOST"] = md.host

Like the real one it answers only requests with ``Metadata-Flavor: Google`` and sets that
header on its answers.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from tpudoctor.testing.loopback import LoopbackServer, send


def tpu_vm_metadata(project: str, zone: str, node: str, accelerator_type: str = "v4-8", *, worker: int = 0,
                    workers: int = 1, service_account: str = "tpu-sa@p.iam.gserviceaccount.com",
                    runtime_version: str | None = None) -> dict[str, Any]:
    env = {"ACCELERATOR_TYPE": accelerator_type, "NODE_ID": node, "WORKER_ID": str(worker), "ZONE": zone}
    if runtime_version:
        env["RUNTIME_VERSION"] = runtime_version
    return {
        "project": {"project-id": project, "numeric-project-id": "123456789"},
        "instance": {
            "zone": f"projects/123456789/zones/{zone}",
            "name": f"t1v-n-0a1b2c3d-w-{worker}",
            "description": node,
            "attributes": {
                "accelerator-type": accelerator_type,
                "agent-worker-number": str(worker),
                "worker-network-endpoints": ",".join(f"10.130.0.{i + 2}" for i in range(workers)),
                "tpu-env": "".join(f"{k}: '{v}'\n" for k, v in env.items()),
            },
            "service-accounts": {"default": {"email": service_account}},
        },
    }


class FakeMetadataServer(LoopbackServer):
    def __init__(self, tree: dict[str, Any]):
        super().__init__()
        self.tree = tree
        self.requests: list[str] = []

    def handle(self, handler, method: str) -> None:
        path = urlparse(handler.path).path
        self.requests.append(path)
        flavor = {"Metadata-Flavor": "Google"}
        if handler.headers.get("Metadata-Flavor") != "Google":
            send(handler, 403, "Missing Metadata-Flavor:Google header.", headers=flavor)
            return
        node: Any = self.tree
        parts = [p for p in path.removeprefix("/computeMetadata/v1").split("/") if p]
        for part in parts:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                send(handler, 404, "Not Found", headers=flavor)
                return
        if isinstance(node, dict):
            send(handler, 200, "".join(f"{k}/\n" if isinstance(v, dict) else f"{k}\n" for k, v in node.items()),
                 headers=flavor)
        else:
            send(handler, 200, str(node), headers=flavor)
