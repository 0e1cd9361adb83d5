"""Which worker of a slice this process runs on, as the machine's environment says: a fact, read once.

GKE sets ``TPU_WORKER_ID`` and ``TPU_WORKER_HOSTNAMES`` on each TPU pod; a TPU VM says the same through the
metadata server (``metadata.tpu_vm``). ``tpudoctor.providers.report_environment`` combines them into what each report
records for a merge.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts
from tpudoctor.provider import FactProvider

WORKER_ENV_FACT = "host.worker_env"


class WorkerEnvProvider(FactProvider):
    name = "worker_env"
    provides = (WORKER_ENV_FACT,)
    timeout_s = 1.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        return {WORKER_ENV_FACT: read_worker_env(os.environ)}


def read_worker_env(environ: Mapping[str, str]) -> dict[str, Any]:
    return {
        "worker_id": environ.get("TPU_WORKER_ID") or None,
        "worker_hostnames": [h for h in environ.get("TPU_WORKER_HOSTNAMES", "").split(",") if h.strip()],
    }
