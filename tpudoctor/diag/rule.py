"""The diag rule contract: one declarative class per judgement of a chip's health, on the one rule base.

A rule reads the run's measurements (``DiagInput``: the inventory, the GEMM check, the timed runs, the soak)
and returns a ``Finding`` of kind ``diag`` whose scope names the chips it holds for. A rule whose measurement
the level did not take does not apply. ``examples`` (made by ``example_input`` from a few numbers) are its tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tpudoctor.accelerator_peaks import Peaks
from tpudoctor.diag.expected import ExpectedCount
from tpudoctor.diag.faults import Fault
from tpudoctor.diag.measure import (
    AllReduce,
    DcnAllReduce,
    DeviceInfo,
    GemmCheck,
    Inventory,
    Timings,
)
from tpudoctor.findings import Finding, FindingKind, Remediation, Scope, Severity, Status
from tpudoctor.rule import Example, Rule


@dataclasses.dataclass
class DiagInput:
    level: int
    host: str
    inventory: Inventory
    expected: ExpectedCount | None = None
    """How many chips (and JAX devices) this host should show: ``--expect-chips`` or its accelerator type; None
    when unknown."""
    gemm: GemmCheck | None = None
    matmul: Timings | None = None
    hbm: Timings | None = None
    allreduce: AllReduce | None = None
    soak: Timings | None = None
    dcn: DcnAllReduce | None = None
    """The all-reduce across slices (r3, where the run has more than one slice or process)."""
    distributed: bool = False
    """Whether this run joined a multi-process JAX run (``--distributed``): without it, no DCN link is tested."""
    soak_windows: int = 10
    peaks: Peaks | None = None
    faults: tuple[Fault, ...] = ()
    node: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Where the VM is (``project``, ``zone``, ``tpu``) for the commands a finding gives."""

    def chip(self, device: int) -> str:
        return self.inventory.devices[device].chip if device < len(self.inventory.devices) else f"device:{device}"




class DiagRule(Rule[DiagInput]):
    """Base class for every diag rule. Subclasses set the metadata and implement ``evaluate``."""

    kind: ClassVar[FindingKind] = FindingKind.DIAG
    measurement: ClassVar[str] = "inventory"
    """The measurement it judges (``levels.MEASUREMENTS``); it applies only where the level took it."""
    examples: ClassVar[tuple[Example, ...]] = ()

    def applies(self, subject: DiagInput) -> bool:
        return self.measurement == "inventory" or getattr(subject, self.measurement, None) is not None

    def judged(self, status: Status, severity: Severity, message: str, *, evidence: dict[str, Any],
               chips: Sequence[str] = (), host: str = "", remediation: Remediation | None = None,
               title: str | None = None) -> Finding:
        return Finding(id=self.id, step=None, title=title or self.title, status=status, message=message,
                       severity=severity, evidence=evidence, remediation=remediation, kind=FindingKind.DIAG,
                       skip_reason=message if status is Status.SKIP else None,
                       scope=Scope.of(hosts=[host] if host else (), chips=list(chips)))


def example_devices(count: int, platform: str = "cpu", kind: str = "cpu") -> list[DeviceInfo]:
    return [DeviceInfo(index=i, id=i, platform=platform, kind=kind, process_index=0, coords=None, slice_index=None)
            for i in range(count)]


def example_timings(seconds_by_device: list[float], *, reps: int = 20, unit: str = "tflops", work: float = 1e12,
                    jitter: float = 0.01, soak_slowdown: tuple[int, float, float] | None = None) -> Timings:
    """Timed runs where device i takes ``seconds_by_device[i]`` (a deterministic jitter); ``soak_slowdown``:
    (device, extra fraction, from fraction of the run) for a soak."""
    rng = np.random.default_rng(7)
    rows = []
    for rep in range(reps):
        load = 1 + rng.uniform(0, 0.3)  # the host's load in this repetition, on every device alike
        for device, seconds in enumerate(seconds_by_device):
            value = seconds * load * (1 + rng.uniform(-jitter, jitter))
            if soak_slowdown and device == soak_slowdown[0] and rep / reps >= soak_slowdown[2]:
                value *= 1 + soak_slowdown[1]
            rows.append((rep, device, value, float(rep)))
    frame = pd.DataFrame(rows, columns=["rep", "device", "seconds", "at_s"])
    frame[unit] = work / frame["seconds"] / (1e12 if unit == "tflops" else 1e9)
    return Timings(frame=frame, unit=unit, work=work, size="example")


def example_input(count: int = 8, **fields: Any) -> DiagInput:
    platform, kind = fields.pop("platform", "cpu"), fields.pop("kind", "cpu")
    inventory = fields.pop("inventory", None) or Inventory(backend=platform, jax_version="0.10.2",
                                                           devices=example_devices(count, platform, kind),
                                                           process_count=1)
    return DiagInput(level=fields.pop("level", 2), host="t1v-n-0", inventory=inventory, **fields)


def evaluate_rules(subject: DiagInput, rules: Mapping[str, type[DiagRule]]) -> list[Finding]:
    """The findings of every rule whose measurement the level took, worst first (``rules``: the family's,
    ``tpudoctor.families.load_rules("diag-rules")``)."""
    from tpudoctor.rule import evaluate_rule

    found = [evaluate_rule(cls, subject) for cls in rules.values() if cls().applies(subject)]
    return sorted(found, key=lambda f: (-f.status.rank, -f.severity.rank, f.id))


DiagExample = Example
"""The old name of this family's example type, for plugins written against it (construct it positionally)."""
