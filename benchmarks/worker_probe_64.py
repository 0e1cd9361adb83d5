"""How long NODE-009's parallel probes take for a 64-worker node, healthy and with bad workers.

    .venv/bin/python benchmarks/worker_probe_64.py

Fake workers listen on 127.0.0.2..65 (tpudoctor.testing.fake_workers); the probe is the real
provider code. Prints wall time per scenario and the bound ceil(64 / POOL) x probe timeout.
"""

from __future__ import annotations

import math
import os
import time

from tpudoctor.context import CheckOptions, RunContext
from tpudoctor.facts import Facts
from tpudoctor.findings import Target
from tpudoctor.providers import worker_reachability as wr
from tpudoctor.testing.fake_workers import FakeWorkers

WORKERS = 64
TIMEOUT_S = 2.0


def run(label: str, **faults) -> None:
    with FakeWorkers(WORKERS, **faults) as workers:
        os.environ[wr.PROBE_PORT_ENV] = str(workers.port)
        node = {"name": "bench", "zone": "z", "project": "p",
                "network_endpoints": [{"ip_address": workers.ip(i)} for i in range(WORKERS)]}
        facts = Facts({"tpu.node": node, "metadata.tpu_vm": {"agent_worker_number": 0}})
        ctx = RunContext(target=Target(), options=CheckOptions(api_timeout_s=TIMEOUT_S))
        started = time.monotonic()
        value = wr.WorkerReachabilityProvider().gather(ctx, facts)["tpu.workers_reachability"]
        elapsed_s = time.monotonic() - started
    counts: dict[str, int] = {}
    for row in value["workers"]:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    print(f"{label:<34} wall {elapsed_s:6.3f} s  {counts}")


def main() -> None:
    bound = math.ceil(WORKERS / wr.POOL) * TIMEOUT_S
    print(f"{WORKERS} workers, pool {wr.POOL}, probe timeout {TIMEOUT_S:g} s: bound {bound:g} s")
    run("all healthy")
    run("4 dead (refused)", dead={3, 17, 33, 60})
    run("4 hung (accept, no banner)", hung={3, 17, 33, 60})
    run("8 slow (0.8 s banner)", slow=set(range(0, 64, 8)), slow_s=0.8)
    run("32 hung (worst case: two waves)", hung=set(range(0, 64, 2)))
    run("64 hung (nothing answers)", hung=set(range(64)))


if __name__ == "__main__":
    main()
