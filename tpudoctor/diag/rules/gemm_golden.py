"""gemm-golden: each chip's GEMM agrees with a float64 golden result."""

from __future__ import annotations

import pandas as pd

from tpudoctor.diag.measure import GemmCheck
from tpudoctor.diag.remedies import chip_fault
from tpudoctor.diag.rule import DiagInput, DiagRule, Example, example_input
from tpudoctor.findings import Finding, Severity, Status

TOLERANCE = 1e-3
"""Max |error| over max |golden|: float32 at HIGHEST precision lands near 1e-6; a flipped exponent or high
mantissa bit lands far above."""


def _gemm(errors: list[float]) -> GemmCheck:
    return GemmCheck(size=256, max_relative_error=pd.Series(dict(enumerate(errors))),
                     digests=pd.Series({i: "a" * 64 for i in range(len(errors))}))


class GemmGolden(DiagRule):
    """The same GEMM (seeded inputs, HIGHEST precision) on every chip, against a golden computed once in float64
    by NumPy: a relative error above 1e-3 is a wrong answer, a FAIL (the chip computes wrong; replace the host)."""

    id = "gemm-golden"
    title = "Each chip's GEMM matches the golden result"
    measurement = "gemm"
    docs = "https://arxiv.org/abs/2102.11245"
    examples = (Example("all right", example_input(4, gemm=_gemm([5e-7] * 4)), Status.PASS),
                Example("chip 2 wrong", example_input(4, gemm=_gemm([5e-7, 5e-7, 0.0123, 5e-7])), Status.FAIL))

    def evaluate(self, subject: DiagInput) -> Finding:
        gemm = subject.gemm
        assert gemm is not None  # applies() ran this rule only where the level took its measurement
        errors = gemm.max_relative_error
        bad = errors[errors > TOLERANCE]
        evidence = {"size": gemm.size, "tolerance": TOLERANCE, "max_relative_error": float(errors.max()),
                    "per_chip": {subject.chip(int(d)): float(e) for d, e in errors.items()}}
        if bad.empty:
            return self.judged(Status.PASS, Severity.INFO, f"{len(errors)} chip(s) within {TOLERANCE:g} of the golden "
                               f"(worst {errors.max():.1e})", evidence=evidence, host=subject.host)
        chips = [subject.chip(int(d)) for d in bad.index]
        return self.judged(Status.FAIL, Severity.CRITICAL,
                           f"{', '.join(chips)} computed a wrong GEMM: relative error {bad.max():.2e} "
                           f"(tolerance {TOLERANCE:g})", evidence=evidence, chips=chips, host=subject.host,
                           remediation=chip_fault(subject, chips, "wrong GEMM results", "SILENT_DATA_CORRUPTION"))
