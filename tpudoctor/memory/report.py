"""``MemoryReport``: what ``tpudoctor memory`` prepares, renders and judges its exit status on: per host (capture)
each allocator's peak and the program judged there with its attribution and ranked fixes, per text its
out-of-memory listings, per device memory profile what is live on each device, the pod-wide table of chips' peaks, and the findings."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from tpudoctor.findings import Finding

DOCUMENT_KIND = "memory"
SCHEMA_VERSION = "1.1"  # 1.1: allocators[].peak_share_of_capacity


@dataclasses.dataclass
class MemoryReport:
    inputs: list[str]
    hosts: list[dict[str, Any]]
    """One per capture file: ``allocators`` (peak, capacity, buffers at the peak, sampled timeline) and
    ``programs`` (the plan judged, its attribution, its fixes)."""
    texts: list[dict[str, Any]]
    """One per text input: its out-of-memory ``listings`` and ``compiled_stats``."""
    pod: dict[str, Any]
    """Every chip's peak across the hosts, the median, the spread and the outliers."""
    findings: list[Finding]
    options: dict[str, Any]
    duration_s: float
    tool_version: str
    profiles: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """One per JAX device memory profile (pprof): live bytes per device and the sites that made them."""

    kind: ClassVar[str] = DOCUMENT_KIND

    @property
    def results(self) -> list[Finding]:
        return self.findings

    def to_dict(self) -> dict[str, Any]:
        statuses = [f.status.value for f in self.findings]
        return {"kind": DOCUMENT_KIND, "schema_version": SCHEMA_VERSION,
                "tool": {"name": "tpudoctor", "version": self.tool_version},
                "inputs": list(self.inputs), "options": dict(self.options), "hosts": self.hosts, "texts": self.texts,
                "profiles": self.profiles,
                "pod": self.pod, "duration_s": round(self.duration_s, 3),
                "summary": {s: statuses.count(s) for s in ("PASS", "WARN", "FAIL", "SKIP", "ERROR")},
                "findings": [f.to_dict() for f in self.findings]}
