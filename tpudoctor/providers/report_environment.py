"""What each worker records in its own report so that a merge can compare workers.

The worker number comes from, in order: ``--worker``/``TPUDOCTOR_WORKER`` (the settings' target),
``TPU_WORKER_ID`` (set by GKE on each TPU pod; the ``host.worker_env`` fact), the metadata server's
``agent-worker-number`` (a TPU VM). The slice size comes from ``TPU_WORKER_HOSTNAMES`` (GKE) or the metadata
server's ``worker-network-endpoints``. Package versions are read from package metadata (no framework import).
Facts only: nothing here reads the process environment.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts
from tpudoctor.findings import Target
from tpudoctor.provider import FactProvider


def worker_environment(facts: Mapping[str, Any] | Any, target: Target) -> dict[str, Any]:
    from tpudoctor.providers.python_env import installed_versions
    from tpudoctor.providers.worker_env import WORKER_ENV_FACT

    worker_env = _fact(facts, WORKER_ENV_FACT)
    vm = _fact(facts, "metadata.tpu_vm")
    packages = _fact(facts, "packages.installed") or installed_versions()
    runtime = _fact(facts, "runtime.target") or {}
    worker = target.worker or worker_env.get("worker_id")
    if worker in (None, "") and vm.get("agent_worker_number") is not None:
        worker = vm.get("agent_worker_number")
    hostnames = worker_env.get("worker_hostnames") or []
    endpoints = vm.get("worker_network_endpoints") or []
    return {
        "worker": None if worker in (None, "") else str(worker),
        "slice_workers": len(hostnames) or len(endpoints) or None,
        "python": platform.python_version(),
        "packages": dict(packages),
        "runtime_version": runtime.get("runtime_version") or vm.get("runtime_version"),
    }


def _fact(facts: Any, key: str) -> Any:
    value = facts.value(key) if hasattr(facts, "value") else facts.get(key)
    return value if isinstance(value, dict) else {}


REPORT_ENVIRONMENT = "report.environment"
"""The fact the runner records as the report's ``environment``."""


class ReportEnvironmentProvider(FactProvider):
    """Where this run happened, for a merge: gathered last, from the facts the run already has (it reads
    the metadata server's and the runtime's facts only if a check asked for them: never a call of its own).
    Gathered even when the run's time is up, within its own limit: without it a worker's report has no
    worker number for ``-o .../{worker}.json`` or a merge."""

    name = "report_environment"
    provides = (REPORT_ENVIRONMENT,)
    timeout_s = 10.0
    after_deadline = True

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        return {REPORT_ENVIRONMENT: worker_environment(facts, ctx.target)}
