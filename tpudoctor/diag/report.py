"""``DiagReport``: what ``tpudoctor diag`` prepares, renders and judges its exit status on: the level, the devices,
the figures per chip, and the findings (r1's checks and the diag rules)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from tpudoctor.findings import Finding

DOCUMENT_KIND = "diag"
SCHEMA_VERSION = "1.1"  # 1.1: chips[].matmul_slow and hbm_slow (the peers' verdict)


@dataclasses.dataclass
class DiagReport:
    level: int
    host: str
    backend: str
    jax_version: str
    devices: list[dict[str, Any]]
    sizes: dict[str, Any]
    chips: list[dict[str, Any]]
    """One row per chip: its figures (units in the keys) and whether each test flagged it."""
    allreduce: dict[str, Any] | None
    soak: list[dict[str, Any]] | None
    """Per window and chip: slowness against the peers."""
    peaks: dict[str, Any] | None
    faults_injected: list[str]
    findings: list[Finding]
    duration_s: float
    tool_version: str
    worker: str | None = None
    dcn: dict[str, Any] | None = None
    """The all-reduce across slices or processes (r3 with ``--distributed``), None where none was run."""

    kind: ClassVar[str] = DOCUMENT_KIND

    @property
    def results(self) -> list[Finding]:
        return self.findings

    def to_dict(self) -> dict[str, Any]:
        statuses = [f.status.value for f in self.findings]
        return {"kind": DOCUMENT_KIND, "schema_version": SCHEMA_VERSION,
                "tool": {"name": "tpudoctor", "version": self.tool_version},
                "level": self.level, "host": self.host, "worker": self.worker, "backend": self.backend,
                "jax_version": self.jax_version, "devices": self.devices, "sizes": self.sizes, "chips": self.chips,
                "allreduce": self.allreduce, "dcn": self.dcn, "soak": self.soak, "peaks": self.peaks,
                "faults_injected": self.faults_injected, "duration_s": round(self.duration_s, 3),
                "summary": {s: statuses.count(s) for s in ("PASS", "WARN", "FAIL", "SKIP", "ERROR")},
                "findings": [f.to_dict() for f in self.findings]}
