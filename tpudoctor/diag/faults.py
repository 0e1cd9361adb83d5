"""Faults a test (or a person checking the detector) can inject into a diag run: a device made slower, a bit
flipped in one device's output, a device that slows down part-way through the soak.

``--inject slow:3:0.10`` makes device 3 take 10 % longer for every timed run (it spins for the extra time
inside the timed region, so the wall clock sees it); ``--inject bitflip:5`` flips one bit of device 5's GEMM
result as it reaches the host; ``--inject slowdown:2:0.20@0.5`` makes device 2 20 % slower from half-way
through the soak. Injected runs say so in the report.
"""

from __future__ import annotations

import dataclasses
import re
import time

from tpudoctor.diag.levels import MEASUREMENTS
from tpudoctor.errors import UsageError

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_SPEC = re.compile(rf"^(?P<kind>slow|bitflip|slowdown):(?P<device>\d+)(?::(?P<amount>{_NUMBER})(?:@(?P<at>{_NUMBER}))?)?$")
_FORMS = "expected slow:DEVICE:FRACTION, bitflip:DEVICE or slowdown:DEVICE:FRACTION@AT (e.g. slow:3:0.10, " \
         "slowdown:2:0.2@0.5)"
ACTS_IN = {"slow": "matmul", "bitflip": "gemm", "slowdown": "soak"}
"""The measurement each fault acts in: a level that does not take it cannot show the fault."""
_TEST_WORDS = {"matmul": "no timed test (slow acts in r2 and r3's timed tests)",
               "gemm": "no GEMM (bitflip acts in r2 and r3's GEMM)", "soak": "no soak (slowdown acts in r3's soak)"}


@dataclasses.dataclass(frozen=True)
class Fault:
    kind: str
    device: int
    amount: float = 0.0
    """The extra time as a fraction (slow, slowdown)."""
    at_fraction: float = 0.0
    """slowdown: from this fraction of the soak on."""

    def describe(self) -> str:
        if self.kind == "bitflip":
            return f"one bit flipped in device {self.device}'s GEMM result"
        when = f" from {self.at_fraction:.0%} of the soak" if self.kind == "slowdown" else ""
        return f"device {self.device} made {self.amount:.0%} slower{when}"


@dataclasses.dataclass(frozen=True)
class FaultPlan:
    faults: tuple[Fault, ...] = ()

    @classmethod
    def parse(cls, specs: list[str] | tuple[str, ...]) -> FaultPlan:
        faults = []
        for spec in specs:
            match = _SPEC.match(spec.strip())
            if match is None:
                raise UsageError(f"--inject {spec!r}: {_FORMS}")
            kind, amount, at = match["kind"], float(match["amount"] or 0.0), float(match["at"] or 0.0)
            if kind != "bitflip" and not 0 < amount <= 10:
                raise UsageError(f"--inject {spec!r}: the slowdown fraction must be in (0, 10]")
            if kind == "bitflip" and match["amount"] is not None:
                raise UsageError(f"--inject {spec!r}: bitflip takes a device only (bitflip:DEVICE)")
            if kind != "slowdown" and match["at"] is not None:
                raise UsageError(f"--inject {spec!r}: only slowdown takes @AT (a fraction of the soak)")
            if not 0 <= at < 1:
                raise UsageError(f"--inject {spec!r}: @AT is a fraction of the soak, in [0, 1)")
            faults.append(Fault(kind=kind, device=int(match["device"]), amount=amount, at_fraction=at))
        return cls(tuple(faults))

    def check_level(self, level: int) -> None:
        """A fault the level cannot show is a usage error: r1 times nothing, r2 has no soak."""
        for fault in self.faults:
            acts_in = ACTS_IN[fault.kind]
            if acts_in not in MEASUREMENTS[level]:
                raise UsageError(f"--inject {fault.kind}:{fault.device}: r{level} runs {_TEST_WORDS[acts_in]}",
                                 hint=f"tpudoctor diag -r {min(lv for lv, m in MEASUREMENTS.items() if acts_in in m)}"
                                      " --inject ...")

    def check_devices(self, count: int) -> None:
        """A fault on a device this run does not have is a usage error, not a finding about the others."""
        beyond = sorted({f.device for f in self.faults if f.device >= count})
        if beyond:
            raise UsageError(f"--inject names device {', '.join(map(str, beyond))}, but this run has {count} "
                             f"device(s): 0..{count - 1}")

    def extra_fraction(self, device: int, *, soak_fraction: float | None = None) -> float:
        """How much longer a timed run on ``device`` must take (0 when none)."""
        extra = 0.0
        for fault in self.faults:
            if fault.device != device:
                continue
            if fault.kind == "slow":
                extra += fault.amount
            elif fault.kind == "slowdown" and soak_fraction is not None and soak_fraction >= fault.at_fraction:
                extra += fault.amount
        return extra

    def flips(self, device: int) -> bool:
        return any(f.kind == "bitflip" and f.device == device for f in self.faults)

    def describe(self) -> list[str]:
        return [f.describe() for f in self.faults]


def stretch(started: float, elapsed_s: float, extra_fraction: float) -> float:
    """Spin until ``elapsed_s * (1 + extra_fraction)`` has passed since ``started``; the stretched time."""
    if extra_fraction <= 0:
        return elapsed_s
    until = started + elapsed_s * (1 + extra_fraction)
    while time.perf_counter() < until:
        pass
    return time.perf_counter() - started
