"""The GCE metadata server, read with a short timeout so a machine without one answers at once.

Host (chosen by the session, ``tpudoctor.gcp.session.Endpoints``): ``GCE_METADATA_HOST`` (google-auth's
variable; ``host[:port]``), else ``GCE_METADATA_IP``, else 169.254.169.254 (an IP, so no DNS lookup can hang). An answer counts only with the
``Metadata-Flavor: Google`` response header: proxies on link-local addresses answer too.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

DEFAULT_METADATA_HOST = "169.254.169.254"
BASE_PATH = "/computeMetadata/v1/"
DMI_PRODUCT_NAME = "class/dmi/id/product_name"
_PROJECT_ID = re.compile(r"^(?:[a-z0-9.\-]+:)?[a-z][a-z0-9\-]{0,62}$")  # domain-scoped ids carry "example.com:"


class MetadataUnavailable(Exception):
    """No metadata server answered; the message says why, for a person."""


class MetadataServerBroken(MetadataUnavailable):
    """A metadata server is there but answers wrongly (5xx, 429, cut-off or garbled answers)."""


class MetadataNoAnswer(MetadataUnavailable):
    """Timed out or the host does not resolve: no server off GCE, a broken one on GCE."""


def dmi_says_not_google(sysfs_root: str = "/sys") -> bool:
    """True when the firmware names another vendor: then there is no metadata server to ask."""
    try:
        product = (Path(sysfs_root) / DMI_PRODUCT_NAME).read_text(errors="replace").strip()
    except OSError:
        return False
    return bool(product) and "google" not in product.lower()


class MetadataClient:
    def __init__(self, host: str, timeout_s: float = 0.8):
        self.host = host
        self.timeout_s = timeout_s

    def get(self, path: str) -> str | None:
        """The value at ``path`` (relative to /computeMetadata/v1/), or None on 404."""
        import http.client  # here: every run reads this module's defaults, few ask the server

        conn = http.client.HTTPConnection(self.host, timeout=self.timeout_s)
        try:
            conn.request("GET", BASE_PATH + path.lstrip("/"), headers={"Metadata-Flavor": "Google"})
            resp = conn.getresponse()
            body = resp.read().decode("utf-8", errors="replace")
            if resp.getheader("Metadata-Flavor") != "Google":
                raise MetadataUnavailable(
                    f"{self.host} answered HTTP {resp.status} without the Metadata-Flavor header "
                    "(not a Google Cloud metadata server)"
                )
            if resp.status == 404:
                return None
            if resp.status != 200:
                raise MetadataServerBroken(f"metadata server answered HTTP {resp.status} for {path}")
            return body
        except socket.gaierror as exc:
            raise MetadataNoAnswer(f"metadata host {self.host} does not resolve ({exc.strerror})") from exc
        except TimeoutError as exc:
            raise MetadataNoAnswer(f"metadata server at {self.host} did not answer within {self.timeout_s:g}s") from exc
        except ConnectionRefusedError as exc:
            raise MetadataUnavailable(f"cannot reach a metadata server at {self.host}: {exc}") from exc
        except (ConnectionError, http.client.HTTPException) as exc:
            raise MetadataServerBroken(
                f"metadata server at {self.host} broke off its answer to {path}: {type(exc).__name__}: {exc}") from exc
        except OSError as exc:
            raise MetadataUnavailable(f"cannot reach a metadata server at {self.host}: {exc}") from exc
        finally:
            conn.close()


def parse_tpu_env(text: str | None) -> dict[str, str]:
    """``KEY: 'value'`` lines of the tpu-env attribute -> dict (quotes stripped)."""
    env: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def read_tpu_vm(client: MetadataClient) -> dict:
    """Everything step 1 wants from the metadata server; raises MetadataUnavailable off GCE."""
    project = client.get("project/project-id")  # the first call doubles as the probe
    zone_path = client.get("instance/zone") or ""
    attrs = {
        key: client.get(f"instance/attributes/{key}")
        for key in ("accelerator-type", "agent-worker-number", "worker-network-endpoints", "tpu-env")
    }
    if project is not None and not _PROJECT_ID.match(project.strip()):
        raise MetadataServerBroken(f"metadata server answered a project id that is not one: {project[:80]!r}")
    tpu_env = parse_tpu_env(attrs["tpu-env"])
    worker = attrs["agent-worker-number"]
    endpoints = [e.strip() for e in (attrs["worker-network-endpoints"] or "").split(",") if e.strip()]
    description = client.get("instance/description")
    return {
        "project": (project or "").strip() or None,
        "zone": zone_path.strip().rsplit("/", 1)[-1] or None,
        "instance_name": (client.get("instance/name") or "").strip() or None,
        "node_name": tpu_env.get("NODE_ID") or (description or "").strip() or None,
        "accelerator_type": (attrs["accelerator-type"] or "").strip() or tpu_env.get("ACCELERATOR_TYPE"),
        "agent_worker_number": int(worker) if worker and worker.strip().isdigit() else None,
        "worker_network_endpoints": endpoints,
        "tpu_env": tpu_env,
        "service_account_email": (client.get("instance/service-accounts/default/email") or "").strip() or None,
        "runtime_version": tpu_env.get("RUNTIME_VERSION") or None,
        "is_tpu_vm": bool(attrs["accelerator-type"] or tpu_env),
    }
