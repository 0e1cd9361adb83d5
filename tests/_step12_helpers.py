"""Run selected checks through the real runner and providers, as ``tpudoctor check`` does."""

from __future__ import annotations

from tpudoctor.context import CheckOptions, RunContext
from tpudoctor.families import load_registry
from tpudoctor.findings import CheckResult, Target
from tpudoctor.runner import Runner


def run_ids(ids, *, project="p", zone="us-central2-b", tpu="my-tpu", api_timeout_s=5.0, **options):
    registry = load_registry(plugins=False)
    ctx = RunContext(target=Target(project=project, zone=zone, tpu=tpu),
                     options=CheckOptions(api_timeout_s=api_timeout_s, **options), run_timeout_s=120)
    report = Runner(registry, ctx).run([registry.checks[i] for i in ids])
    results: dict[str, CheckResult] = {r.id: r for r in report.results}
    return results, ctx


def commands(result: CheckResult) -> list[str]:
    return list(result.remediation.commands) if result.remediation else []
