"""gemm-bitwise: the same GEMM gives the same bits on every chip (silent data corruption)."""

from __future__ import annotations

import pandas as pd

from tpudoctor.diag.measure import GemmCheck
from tpudoctor.diag.remedies import chip_fault
from tpudoctor.diag.rule import DiagInput, DiagRule, Example, example_input
from tpudoctor.findings import Finding, Severity, Status


def _gemm(digests: list[str]) -> GemmCheck:
    return GemmCheck(size=256, max_relative_error=pd.Series({i: 5e-7 for i in range(len(digests))}),
                     digests=pd.Series(dict(enumerate(digests))))


class GemmBitwise(DiagRule):
    """Same inputs, same compiled program: every chip of one generation must return the same bits. A chip whose
    result differs from the majority is silent data corruption even when the numbers look close (a low mantissa
    bit): a FAIL naming it. Two chips that disagree with no majority cannot say which is wrong (WARN, unknown)."""

    id = "gemm-bitwise"
    title = "Every chip returns the same bits"
    measurement = "gemm"
    docs = "https://arxiv.org/abs/2102.11245"
    examples = (Example("identical", example_input(4, gemm=_gemm(["a"] * 4)), Status.PASS),
                Example("chip 1 differs", example_input(4, gemm=_gemm(["a", "b", "a", "a"])), Status.FAIL),
                Example("two disagree", example_input(2, gemm=_gemm(["a", "b"])), Status.WARN))

    def evaluate(self, subject: DiagInput) -> Finding:
        gemm = subject.gemm
        assert gemm is not None  # applies() ran this rule only where the level took its measurement
        digests = gemm.digests
        counts = digests.value_counts()
        evidence = {"distinct_results": int(len(counts)), "chips": len(digests)}
        if len(counts) == 1:
            return self.judged(Status.PASS, Severity.INFO, f"{len(digests)} chip(s) returned identical bits",
                               evidence=evidence, host=subject.host)
        majority = counts.index[0]
        if counts.iloc[0] * 2 <= len(digests):
            return self.judged(Status.WARN, Severity.HIGH, f"the chips returned {len(counts)} different results and "
                               "none is a majority: one of them is wrong, which cannot be told",
                               evidence={**evidence, "confidence": "unknown",
                                         "confidence_why": "a majority needs three or more chips agreeing"},
                               host=subject.host, remediation=chip_fault(subject, [subject.chip(int(d)) for d in
                                                                                   digests.index],
                                                                         "disagreeing GEMM results",
                                                                         "SILENT_DATA_CORRUPTION"))
        chips = [subject.chip(int(d)) for d, value in digests.items() if value != majority]
        return self.judged(Status.FAIL, Severity.CRITICAL,
                           f"{', '.join(chips)} returned different bits from its {counts.iloc[0]} peers for the same "
                           "GEMM: silent data corruption", evidence={**evidence, "differing": chips}, chips=chips,
                           host=subject.host,
                           remediation=chip_fault(subject, chips, "silent data corruption", "SILENT_DATA_CORRUPTION"))
