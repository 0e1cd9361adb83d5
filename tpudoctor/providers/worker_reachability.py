"""Can this worker reach every other worker of its multi-host node? Parallel, time-bounded probes.

Each worker's internal IP (``tpu.node`` network endpoints) is probed on the SSH port (22; every
TPU VM worker runs sshd, and ``gcloud ... ssh --worker=all`` needs it): a TCP connect, then the
server's ``SSH-`` banner. Probes run in a bounded thread pool, each limited to ``probe_timeout_s``,
so 64 workers cost at most ``ceil(64 / POOL) * probe_timeout_s``. ``TPUDOCTOR_WORKER_PROBE_PORT``
changes the port (tests serve fake workers on loopback addresses).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.provider import FactProvider

PROBE_PORT_ENV = "TPUDOCTOR_WORKER_PROBE_PORT"
DEFAULT_PROBE_PORT = 22
POOL = 32
MAX_PROBE_TIMEOUT_S = 3.0
SLOW_BANNER_MS = 500.0  # sshd answers a LAN connect in milliseconds; half a second is an overloaded VM


def probe_worker(ip: str, port: int, timeout_s: float) -> dict[str, Any]:
    """One worker: status ``ok``/``slow``/``hung``/``refused``/``unreachable``/``error`` with times in ms."""
    started = time.monotonic()
    out: dict[str, Any] = {"ip": ip, "port": port, "status": "error", "connect_ms": None, "banner_ms": None,
                           "detail": ""}
    try:
        sock = socket.create_connection((ip, port), timeout=timeout_s)
    except ConnectionRefusedError:
        out.update(status="refused", detail=f"nothing listens on port {port} (the VM is up; sshd is not)")
        return out
    except TimeoutError:
        out.update(status="unreachable", detail=f"no answer to a connect within {timeout_s:g}s")
        return out
    except OSError as exc:
        out.update(status="unreachable", detail=exc.strerror or str(exc))
        return out
    with sock:
        out["connect_ms"] = round((time.monotonic() - started) * 1000, 1)
        sock.settimeout(max(0.05, timeout_s - (time.monotonic() - started)))
        try:
            banner = sock.recv(64)
        except TimeoutError:
            out.update(status="hung", detail=f"accepted the connection but sent nothing within {timeout_s:g}s")
            return out
        except OSError as exc:
            out.update(status="error", detail=exc.strerror or str(exc))
            return out
    out["banner_ms"] = round((time.monotonic() - started) * 1000, 1)
    if not banner.startswith(b"SSH-"):
        out.update(status="error", detail=f"answered {banner[:20]!r}, not an SSH banner")
    elif out["banner_ms"] > SLOW_BANNER_MS:
        out.update(status="slow", detail=f"answered after {out['banner_ms']:.0f} ms")
    else:
        out["status"] = "ok"
    return out


class WorkerReachabilityProvider(FactProvider):
    name = "worker_reachability"
    provides = ("tpu.workers_reachability",)
    needs = ("tpu.node", "metadata.tpu_vm")
    timeout_s = 60.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        node = facts.value("tpu.node")
        if not node:
            return {"tpu.workers_reachability": Unavailable("the TPU node could not be read (see NODE-001)")}
        endpoints = [e for e in node.get("network_endpoints") or [] if e.get("ip_address")]
        if len(endpoints) < 2:
            return {"tpu.workers_reachability": Unavailable(
                f"{node.get('name') or 'the node'} is a single-host node: there are no other workers to reach")}
        vm = facts.value("metadata.tpu_vm")
        if not vm:
            return {"tpu.workers_reachability": Unavailable(
                "worker IPs are internal to the node's network: run tpudoctor on a worker of the node")}
        port = int(os.environ.get(PROBE_PORT_ENV) or DEFAULT_PROBE_PORT)
        timeout_s = min(MAX_PROBE_TIMEOUT_S, ctx.options.api_timeout_s)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=min(POOL, len(endpoints)), thread_name_prefix="probe-worker") as pool:
            results = list(pool.map(lambda e: probe_worker(e["ip_address"], port, timeout_s), endpoints))
        for index, result in enumerate(results):
            result["worker"] = index
        return {"tpu.workers_reachability": {
            "node": node.get("name"), "zone": node.get("zone"), "project": node.get("project"),
            "from_worker": vm.get("agent_worker_number"), "port": port, "probe_timeout_s": timeout_s,
            "workers": results, "elapsed_s": round(time.monotonic() - started, 3),
        }}
