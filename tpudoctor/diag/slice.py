"""A slice's diag: every worker's report (through the one fan-out, ``tpudoctor.pod.FanOut``) merged into one, each
finding scoped to its worker, each chip row named by worker, and the chips compared across the slice: a chip
whose matmul rate trails the slice's median by more than the spread of all chips allows is named with its worker.
A worker that gave no report is its fan-out problem finding."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tpudoctor.diag.report import DiagReport
from tpudoctor.diag.stats import FLOOR, NOISE_FACTOR
from tpudoctor.errors import InputError
from tpudoctor.findings import Finding, FindingKind, Scope, Severity, Status

SLICE_PEERS = "slice-matmul-peers"


def check_document(document: dict[str, Any], source: str) -> None:
    """A worker's answer must be a diag document of this schema (the fan-out reports it otherwise)."""
    from tpudoctor.schema import validate

    try:
        validate(document, "diag_report")
    except Exception as exc:  # noqa: BLE001 - any refusal is the worker's unreadable answer
        raise InputError(f"{source}: not a diag report: {str(exc).splitlines()[0][:200]}") from None


def _scoped(finding: dict[str, Any], worker: str) -> Finding:
    found = Finding.from_dict(finding)
    return dataclasses.replace(found, scope=Scope.of(workers=[worker], hosts=found.scope.hosts,
                                                     chips=found.scope.chips))


def slice_peers(rows: list[dict[str, Any]]) -> Finding | None:
    """The chips of every worker against the slice's median matmul rate (None with fewer than 3 chips)."""
    rated = [r for r in rows if r.get("matmul_tflops_median")]
    if len(rated) < 3:
        return None
    rates = np.array([r["matmul_tflops_median"] for r in rated])
    median = float(np.median(rates))
    spread = float(np.median(np.abs(rates / median - 1))) * 1.4826
    margin = max(FLOOR, NOISE_FACTOR * spread)
    slow = [r for r in rated if 1 - r["matmul_tflops_median"] / median > margin]
    evidence = {"slice_median_tflops": median, "margin": margin, "chips": len(rated)}
    title = "No chip trails the slice"
    if not slow:
        return Finding(id=SLICE_PEERS, step=None, title=title, status=Status.PASS, severity=Severity.INFO,
                       message=f"{len(rated)} chips within {margin:.0%} of the slice's median matmul rate",
                       evidence=evidence, kind=FindingKind.DIAG)
    names = [f"worker {r['worker']} {r['chip']}" for r in slow]
    return Finding(id=SLICE_PEERS, step=None, title=title, status=Status.FAIL, severity=Severity.HIGH,
                   message=f"{', '.join(names)} trail the slice's median matmul rate by more than {margin:.0%}",
                   evidence={**evidence, "slow": names}, kind=FindingKind.DIAG,
                   scope=Scope.of(workers=sorted({r["worker"] for r in slow}), chips=[r["chip"] for r in slow]))


def merge_outcomes(outcomes: list, *, name: str, level: int, tool_version: str) -> DiagReport:
    findings: list[Finding] = []
    rows: list[dict[str, Any]] = []
    devices: list[dict[str, Any]] = []
    backends, faults, duration = set(), [], 0.0
    jax_version = ""
    for outcome in outcomes:
        if outcome.problem is not None or outcome.document is None:
            findings.append(outcome.problem)
            continue
        doc = outcome.document
        backends.add(doc["backend"])
        jax_version = jax_version or doc["jax_version"]
        duration = max(duration, float(doc["duration_s"]))
        faults += [f"worker {outcome.worker}: {f}" for f in doc["faults_injected"]]
        findings += [_scoped(f, outcome.worker) for f in doc["findings"]]
        rows += [{**row, "worker": outcome.worker} for row in doc["chips"]]
        devices += [{**d, "worker": outcome.worker} for d in doc["devices"]]
    across = slice_peers(rows)
    if across is not None:
        findings.append(across)
    findings.sort(key=lambda f: (-f.status.rank, -f.severity.rank, f.id))
    return DiagReport(level=level, host=f"slice {name}", backend="/".join(sorted(backends)) or "none",
                      jax_version=jax_version, devices=devices, sizes={}, chips=rows, allreduce=None, soak=None,
                      peaks=None, faults_injected=faults, findings=findings, duration_s=duration,
                      tool_version=tool_version)
