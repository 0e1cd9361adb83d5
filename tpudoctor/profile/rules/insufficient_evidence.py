"""Enough in the capture to judge it: steps, step coverage of the window, device time."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.analysis.evidence import MinimumEvidence, check_evidence
from tpudoctor.profile.host_result import Evidence, HostResult
from tpudoctor.profile.rule import Example, ProfileRule

EVIDENCE_RULE = "insufficient-evidence"


def _host(steps: int, span_ms: float, window_ms: float = 1000.0, device_ms: float = 500.0) -> HostResult:
    return HostResult("h", evidence=Evidence(steps=steps, step_span_ms=span_ms, window_ms=window_ms,
                                             device_time_ms=device_ms, has_step_markers=steps > 0))


class InsufficientEvidence(ProfileRule):
    """The capture holds the named minimum evidence (``MinimumEvidence``: steps, the share of the
    window the steps span; device time to call a job device-bound). Below it no verdict is given
    (``unknown``) and no finding is HIGH: the verdict precedence reads this rule's evidence."""

    id = EVIDENCE_RULE
    needs = ('steps', 'window', 'device-ops')
    title = "The capture holds enough to judge"
    minimum = MinimumEvidence()
    docs = "https://docs.jax.dev/en/latest/profiling.html"
    examples = (
        Example("twenty steps over most of the window", _host(20, 900.0), Status.PASS),
        Example("three kernel runs in a long window", _host(3, 0.6, 700.0, 0.6), Status.WARN),
        Example("steps over a tenth of the window", _host(20, 100.0), Status.WARN),
    )

    def evaluate(self, host: HostResult):
        if host.evidence is None:
            return self.passed("the evidence was not measured for this host (a hand-built result)")
        if host.steps.micro_benchmark:  # no loop whose steps could be too few: micro-benchmark says why
            return self.passed("no training loop to judge: see micro-benchmark")
        check = check_evidence(host.evidence, minimum=self.minimum)
        if check.enough:
            return self.passed(
                f"{host.evidence.steps} steps spanning {host.evidence.step_coverage_percent:.0f}% of the window",
                evidence=check.to_dict())
        return self.fired(Severity.MEDIUM, "Too little in the capture to judge the bottleneck", check.reason,
                          evidence=check.to_dict(), fixes=check.fixes)
