"""dcn-allreduce: the all-reduce across the slices of a multi-slice run completes, at a bandwidth the data-centre
network can give."""

from __future__ import annotations

import dataclasses

import pandas as pd

from tpudoctor.accelerator_peaks import generations
from tpudoctor.diag.measure import DcnAllReduce
from tpudoctor.diag.rule import DiagInput, DiagRule, Example, example_input
from tpudoctor.findings import Finding, Remediation, Severity, Status

WARN_BELOW = 0.3
"""Of the published per-chip DCN figure: a gradient-sized all-reduce reaches well above this on a sound network."""
_V5P = dataclasses.replace(generations()["v5p"], dcn_gbps=25.0)  # an example figure, not a published one


def _dcn(gbps: float, across: str = "slices") -> DcnAllReduce:
    rows = [("dcn", rep, 1.0, gbps) for rep in range(5)]
    return DcnAllReduce(axes={"dcn": 2}, frame=pd.DataFrame(rows, columns=["axis", "rep", "seconds", "bus_gbps"]),
                        bytes_per_device=2**28, across=across, process_count=2)


class DcnAllReduceAcrossSlices(DiagRule):
    """r3 with ``--distributed`` on every worker: a psum across the slices (the ``dcn`` axis of a mesh whose other
    axis is each slice's chips; where the devices name no slice, across the processes' hosts), timed as NCCL
    measures bus bandwidth. Judged against the generation's per-chip DCN figure where the peaks table has one (below
    30 % is a FAIL: a host's network is degraded); without one, the figure with confidence unknown. A run that
    joined no multi-process JAX run has no DCN link to test: SKIP, saying how to run it."""

    id = "dcn-allreduce"
    title = "All-reduce across slices (DCN)"
    measurement = "dcn"
    docs = "https://cloud.google.com/tpu/docs/multislice-introduction"
    examples = (Example("two v5p slices, sound", example_input(8, kind="TPU v5", platform="tpu", peaks=_V5P,
                                                                   level=3, distributed=True, dcn=_dcn(20.0)),
                            Status.PASS),
                Example("two v5p slices, slow network", example_input(8, kind="TPU v5", platform="tpu",
                                                                          peaks=_V5P, level=3, distributed=True,
                                                                          dcn=_dcn(2.0)), Status.FAIL),
                Example("cpu processes: no published figure",
                            example_input(8, level=3, distributed=True, dcn=_dcn(0.4, "processes")), Status.PASS),
                Example("one process", example_input(8, level=3), Status.SKIP))

    def applies(self, subject: DiagInput) -> bool:
        return subject.level >= 3

    def evaluate(self, subject: DiagInput) -> Finding:
        run = subject.dcn
        if run is None:
            why = ("this run joined no multi-process JAX run" if not subject.distributed
                   else "the run has one slice and one process")
            finding = self.judged(Status.SKIP, Severity.INFO, f"no DCN link tested: {why}",
                                  evidence={"distributed": subject.distributed, "confidence": "unknown",
                                            "would_tell": "tpudoctor diag -r 3 --distributed on every worker of "
                                                          "every slice at once (--all-workers)"},
                                  host=subject.host)
            finding.skip_reason = why
            return finding
        median = float(run.frame["bus_gbps"].median())
        evidence = {"across": run.across, "groups": run.axes["dcn"], "process_count": run.process_count,
                    "bytes_per_device": run.bytes_per_device, "bus_gbps": round(median, 4)}
        where = f"across {run.axes['dcn']} {run.across}"
        peaks = subject.peaks
        peak = peaks.dcn_gbps if peaks else None
        if peaks is None or peak is None:
            return self.judged(Status.PASS, Severity.INFO, f"all-reduce {where}: {median:.3g} GB/s bus bandwidth",
                               evidence={**evidence, "confidence": "unknown",
                                         "confidence_why": "no published DCN figure for this device kind (the peaks "
                                                           "table's dcn_gbps)"},
                               host=subject.host)
        evidence.update({"peak_gbps": peak, "peaks_source": peaks.source, "confidence": "medium"})
        if median < WARN_BELOW * peak:
            return self.judged(Status.FAIL, Severity.HIGH,
                               f"all-reduce {where} at {median:.3g} GB/s: under {WARN_BELOW:.0%} of the {peak:g} GB/s "
                               "DCN figure", evidence=evidence, host=subject.host,
                               remediation=Remediation(
                                   text="Run it again on each pair of slices to find the host whose network is slow; "
                                        "REPLACE-HOST if one repeats.",
                                   commands=("tpudoctor diag -r 3 --distributed --all-workers",)))
        return self.judged(Status.PASS, Severity.INFO,
                           f"all-reduce {where} above {WARN_BELOW:.0%} of the DCN figure ({median:.3g} GB/s)",
                           evidence=evidence, host=subject.host)
