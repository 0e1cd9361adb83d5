"""matmul-peak: the chips' sustained matmul rate against the generation's published peak."""

from __future__ import annotations

from tpudoctor.accelerator_peaks import generations
from tpudoctor.diag.judging import PeakRateRule
from tpudoctor.diag.rule import Example, example_input, example_timings
from tpudoctor.findings import Status

_V6E = generations()["v6e"]


class MatmulPeak(PeakRateRule):
    """The sustained rate (each chip's p10 over repetitions, the median over chips) of a large bf16 matmul against
    the generation's dense bf16 peak (``accelerator_peaks.toml``): below half is a WARN of low confidence (every
    chip alike points at the test or the host more often than the chips). No published peak (a CPU): unknown."""

    id = "matmul-peak"
    title = "Sustained matmul rate against the published peak"
    measurement = "matmul"
    peak_field = "bf16_tflops"
    what = "matmul rate"
    docs = "https://cloud.google.com/tpu/docs/v6e"
    examples = (
        Example("v6e near its peak", example_input(4, kind="TPU v6 lite", platform="tpu", peaks=_V6E,
                                                matmul=example_timings([1.0] * 4, work=1000e12, jitter=0.0)),
                    Status.PASS),
        Example("v6e at a third of its peak", example_input(4, kind="TPU v6 lite", platform="tpu", peaks=_V6E,
                                                matmul=example_timings([2.5] * 4, work=1000e12, jitter=0.0)),
                    Status.WARN),
        Example("cpu: no peak", example_input(4, matmul=example_timings([1.0] * 4)), Status.PASS),
    )
