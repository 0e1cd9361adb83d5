from __future__ import annotations

import shlex
from collections import Counter
from typing import Any

from tpudoctor.check import Example
from tpudoctor.checks.slice._base import OUTCOMES, TARGET, _SliceCheck
from tpudoctor.checks.slice._examples import fanned_out, worker_report
from tpudoctor.facts import Facts
from tpudoctor.findings import (
    CheckResult,
    Finding,
    Remediation,
    Report,
    Scope,
    Severity,
    Status,
    Step,
    Target,
)
from tpudoctor.pod.worker_ids import describe_workers, natural_key

# Packages whose versions must agree on every worker of a slice: multi-host programs are compiled on each
# worker and must match, and libtpu versions must agree for the workers to form one slice.
FRAMEWORK_PACKAGES = ("jax", "jaxlib", "libtpu", "libtpu-nightly", "tensorflow", "tensorflow-tpu", "tf-nightly",
                      "torch", "torch-xla", "flax", "keras")

_OLD_JAX = {"jax": "0.4.31", "jaxlib": "0.4.31", "libtpu": "0.0.5"}


class SameVersions(_SliceCheck):
    """Every worker runs the same framework and libtpu versions (FAIL: the workers compile different
    programs), and the same tpudoctor, Python and runtime image (WARN: their reports compare less well)."""

    id = "POD-004"
    title = "Every worker runs the same framework versions"
    step = Step.RUNTIME
    facts = (OUTCOMES, TARGET)
    docs = "https://cloud.google.com/tpu/docs/runtimes"
    examples = (
        Example("the same everywhere", fanned_out(worker_report("0"), worker_report("1")), Status.PASS),
        Example("worker 1 has an older jax", fanned_out(worker_report("0"), worker_report("1", packages=_OLD_JAX)), Status.FAIL),
        Example("worker 1 has another Python", fanned_out(worker_report("0"), worker_report("1", python="3.10.14")), Status.WARN),
        Example("one report", fanned_out(worker_report("0")), Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        outcomes: dict[str, Any] = facts.require(OUTCOMES)
        target = facts.require(TARGET)
        reports = {w: o.report for w, o in outcomes.items() if o.report is not None}
        base = dict(id=self.id, step=self.step, title=self.title)
        if len(reports) < 2:
            reason = "fewer than two worker reports to compare"
            return Finding(**base, status=Status.SKIP, message=reason, skip_reason=reason, severity=Severity.INFO)
        per_worker = {w: _versions(r) for w, r in reports.items()}
        names = sorted({name for v in per_worker.values() for name in v})
        differing: dict[str, dict[str, list[str]]] = {}
        odd: set[str] = set()
        fixes: list[str] = []
        lines: list[str] = []
        for name in names:
            values = {w: v.get(name, "not installed") for w, v in per_worker.items()}
            counts = Counter(values.values())
            if len(counts) < 2:
                continue
            majority = counts.most_common(1)[0][0]
            groups: dict[str, list[str]] = {}
            for w, value in values.items():
                groups.setdefault(value, []).append(w)
            differing[name] = groups
            minority = [w for w, value in values.items() if value != majority]
            odd.update(minority)
            lines.append(f"{name} {majority} on {counts[majority]} of {len(values)} workers, "
                         + "; ".join(f"{value} on {describe_workers(ws)}" for value, ws in groups.items()
                                     if value != majority))
            if name in FRAMEWORK_PACKAGES:
                pip = f"pip uninstall -y {name}" if majority == "not installed" else f"pip install {name}=={majority}"
                fixes.append(_on_workers(target, minority, pip))
        evidence: dict[str, Any] = {"versions_by_worker": per_worker if len(per_worker) <= 16 else None,
                                    "differing": differing}
        if not differing:
            shown = ", ".join(f"{k} {v}" for k, v in next(iter(per_worker.values())).items())
            return Finding(**base, status=Status.PASS, severity=Severity.INFO, evidence={"versions": shown},
                           message=f"all {len(reports)} workers run {shown or 'the same (no versions recorded)'}")
        frameworks = [n for n in differing if n in FRAMEWORK_PACKAGES]
        status = Status.FAIL if frameworks else Status.WARN
        return Finding(
            **base, status=status, severity=Severity.HIGH if frameworks else Severity.LOW, evidence=evidence,
            message=f"versions differ across workers: {'; '.join(lines)}", scope=Scope.of(workers=sorted(odd)),
            remediation=Remediation(
                text="Every worker of a slice must run the same framework and libtpu versions, or the workers compile "
                     "different programs and the job hangs or fails at start-up. Install the majority's version on "
                     "the odd workers (or rebuild them from one image)." if frameworks else
                     "Install the same tpudoctor and Python on every worker, so their reports compare like for like.",
                commands=tuple(fixes)),
        )


def _versions(report: Report) -> dict[str, str]:
    """Versions a worker recorded: its environment, else the frameworks RUNTIME-002 listed (older reports)."""
    env = report.environment or {}
    found: dict[str, str] = {}
    packages = env.get("packages")
    if not isinstance(packages, dict):
        packages = next((r.evidence.get("frameworks") for r in report.results
                         if r.id == "RUNTIME-002" and isinstance(r.evidence.get("frameworks"), dict)), None) or {}
    for name in FRAMEWORK_PACKAGES:
        if name in packages:
            found[name] = str(packages[name])
    if report.tool_version:
        found["tpudoctor"] = report.tool_version
    if env.get("python"):
        found["python"] = str(env["python"])
    if env.get("runtime_version"):
        found["runtime image"] = str(env["runtime_version"])
    return found


def _on_workers(target: Target, workers: list[str], command: str) -> str:
    if not target.tpu:
        return command
    ssh = ["gcloud", "compute", "tpus", "tpu-vm", "ssh", target.tpu, "--zone", target.zone or "ZONE"]
    if target.project:
        ssh += ["--project", target.project]
    ssh += [f"--worker={','.join(sorted(workers, key=natural_key))}", "--command", command]
    return shlex.join(ssh)
