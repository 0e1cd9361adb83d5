"""hbm-peak: the chips' sustained memory bandwidth against the generation's published peak."""

from __future__ import annotations

from tpudoctor.accelerator_peaks import generations
from tpudoctor.diag.judging import PeakRateRule
from tpudoctor.diag.rule import Example, example_input, example_timings
from tpudoctor.findings import Status

_V5E = generations()["v5e"]


class HbmPeak(PeakRateRule):
    """The sustained read+write bandwidth on arrays of at least 1 GiB against the generation's HBM peak: below
    half is a WARN of low confidence; no published peak: unknown."""

    id = "hbm-peak"
    title = "Sustained memory bandwidth against the published peak"
    measurement = "hbm"
    peak_field = "hbm_gbps"
    what = "memory bandwidth"
    docs = "https://cloud.google.com/tpu/docs/v5e"
    examples = (
        Example("v5e near its peak", example_input(4, kind="TPU v5 lite", platform="tpu", peaks=_V5E,
                                                hbm=example_timings([1.0] * 4, unit="gbps", work=720e9, jitter=0.0)),
                    Status.PASS),
        Example("v5e at a fifth of its peak", example_input(4, kind="TPU v5 lite", platform="tpu", peaks=_V5E,
                                                hbm=example_timings([3.6] * 4, unit="gbps", work=720e9, jitter=0.0)),
                    Status.WARN),
    )
