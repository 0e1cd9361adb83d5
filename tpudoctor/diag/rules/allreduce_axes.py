"""allreduce-axes: the all-reduce along each mesh axis completes at a bandwidth the interconnect can give."""

from __future__ import annotations

import pandas as pd

from tpudoctor.accelerator_peaks import generations
from tpudoctor.diag.measure import AllReduce
from tpudoctor.diag.rule import DiagInput, DiagRule, Example, example_input
from tpudoctor.findings import Finding, Remediation, Severity, Status

WARN_BELOW = 0.3
"""Of the per-chip interconnect peak: an all-reduce of a few hundred MiB reaches well above this on a sound link."""
_V5E = generations()["v5e"]


def _allreduce(x: float, y: float) -> AllReduce:
    rows = [(axis, rep, 1.0, gbps) for axis, gbps in (("x", x), ("y", y)) for rep in range(5)]
    return AllReduce(axes={"x": 2, "y": 4}, frame=pd.DataFrame(rows, columns=["axis", "rep", "seconds", "bus_gbps"]),
                     bytes_per_device=2**28)


class AllReduceAxes(DiagRule):
    """psum along each axis of a mesh over the VM's chips, as NCCL measures it (bus bandwidth = bytes x 2(k-1)/k
    over the time): the median per axis against the generation's interconnect peak where one is published (below
    30 % is a FAIL: a link is down or degraded; the axis names which chips share it); with no published peak, the
    figures with confidence unknown (axes of different sizes run different algorithms, so they are not compared
    with each other)."""

    id = "allreduce-axes"
    title = "All-reduce along each mesh axis"
    measurement = "allreduce"
    docs = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"
    examples = (Example("v5e healthy", example_input(8, kind="TPU v5 lite", platform="tpu", peaks=_V5E,
                                                         allreduce=_allreduce(150.0, 140.0)), Status.PASS),
                Example("v5e link down", example_input(8, kind="TPU v5 lite", platform="tpu", peaks=_V5E,
                                                           allreduce=_allreduce(150.0, 20.0)), Status.FAIL),
                Example("cpu: no published peak", example_input(8, allreduce=_allreduce(0.6, 0.2)), Status.PASS))

    def evaluate(self, subject: DiagInput) -> Finding:
        run = subject.allreduce
        assert run is not None  # applies() ran this rule only where the level took its measurement
        medians = run.frame.groupby("axis")["bus_gbps"].median()
        evidence = {"axes": run.axes, "bytes_per_device": run.bytes_per_device,
                    "bus_gbps": {a: round(float(v), 4) for a, v in medians.items()}}
        peaks = subject.peaks
        peak = peaks.ici_gbps if peaks else None
        if peaks is not None and peak is not None:
            low = {a: v for a, v in medians.items() if v < WARN_BELOW * peak}
            evidence.update({"peak_gbps": peak, "peaks_source": peaks.source})
            if low:
                return self.judged(Status.FAIL, Severity.HIGH,
                                   "all-reduce along " + ", ".join(f"axis {a} at {v:.3g} GB/s" for a, v in low.items())
                                   + f": under {WARN_BELOW:.0%} of the {peak:g} GB/s interconnect peak",
                                   evidence={**evidence, "confidence": "medium"}, host=subject.host,
                                   remediation=Remediation(text="REPLACE-HOST if it repeats: an interconnect link of "
                                                                "this VM is degraded.",
                                                           commands=(f"tpudoctor diag -r {subject.level}",)))
            return self.judged(Status.PASS, Severity.INFO, "all-reduce along every axis above "
                               f"{WARN_BELOW:.0%} of the interconnect peak", evidence={**evidence, "confidence": "medium"},
                               host=subject.host)
        return self.judged(Status.PASS, Severity.INFO,
                           "all-reduce: " + ", ".join(f"axis {a} {v:.3g} GB/s" for a, v in medians.items()),
                           evidence={**evidence, "confidence": "unknown",
                                     "confidence_why": "no published interconnect peak for this device kind"},
                           host=subject.host)
