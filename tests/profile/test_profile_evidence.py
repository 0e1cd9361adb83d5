"""Enough evidence or ``unknown``: a capture with too little in it gets no confident verdict."""

from __future__ import annotations

import pytest
from paths import TESTS

import tpudoctor.profile
from tpudoctor.findings import Severity
from tpudoctor.profile.analysis.evidence import (
    MIN_DEVICE_TIME_MS,
    MIN_STEP_COVERAGE_PERCENT,
    MIN_STEPS,
    Evidence,
    check_evidence,
    evidence_of,
)
from tpudoctor.profile.rule import fixes_of

FIXTURES = TESTS / "fixtures" / "profiles"


def _host(case: str):
    """The pipeline's report of a one-host fixture (its primary host is the only host)."""
    return tpudoctor.profile.analyze(FIXTURES / case)


def test_kernel_benchmark_capture_is_a_micro_benchmark_and_says_why():
    # Real JAX capture: 3 calls of a small kernel in a 0.7 s window, no step markers. Its 3 calls are
    # no training loop (before, they were "3 step(s)", too few to judge): a micro-benchmark, no steps.
    result = _host("jax_kernel_benchmark")
    ev = evidence_of(result)
    assert ev.steps == 0 and not ev.has_step_markers
    assert 600 < ev.window_ms < 900 and ev.device_time_ms < 5
    assert not check_evidence(ev).enough
    assert result.verdict == "unknown"
    assert result.verdict_reason.startswith("micro-benchmark: no training loop")
    assert "ran 3 time(s)" in result.verdict_reason and f"at least {MIN_STEPS}" in result.verdict_reason
    assert all(f.severity.rank < Severity.HIGH.rank for f in result.findings)
    finding = result.findings[0]  # why there is no verdict comes first
    assert finding.id == "micro-benchmark"
    assert any("StepTraceAnnotation" in fix for fix in fixes_of(finding))  # no step markers: say how to add them
    assert finding.evidence["loop"]["runs"] == 3 and finding.evidence["programs"][0]["runs"] == 3


def test_report_document_carries_the_unknown_verdict():
    doc = tpudoctor.profile.analyze(FIXTURES / "jax_kernel_benchmark").to_dict()
    assert doc["verdict"] == "unknown"
    assert doc["verdict_reason"].startswith("micro-benchmark: no training loop")
    assert doc["verdict_confidence"]["level"] == "unknown"
    assert not any(f["severity"] == "high" for f in doc["findings"])


@pytest.mark.parametrize(("case", "verdict"), [
    ("jax_compute_bound", "device-bound"), ("jax_input_bound", "input-bound"), ("tf_eager", "host-bound"),
    ("jax_recompiling", "compile-bound"),
])
def test_captures_with_enough_evidence_keep_their_verdict(case, verdict):
    result = _host(case)
    check = check_evidence(evidence_of(result), verdict=result.verdict)
    assert check.enough, check.reason
    assert result.verdict == verdict
    assert not any(f.id == "insufficient-evidence" for f in result.findings)


def _evidence(**kw) -> Evidence:
    base = {"steps": 20, "step_span_ms": 900.0, "window_ms": 1000.0, "device_time_ms": 500.0,
            "has_step_markers": True}
    return Evidence(**{**base, **kw})


def test_each_named_minimum_can_fail_alone():
    assert check_evidence(_evidence()).enough
    few = check_evidence(_evidence(steps=MIN_STEPS - 1))
    assert not few.enough and len(few.reasons) == 1 and "step(s)" in few.reason
    assert not any("StepTraceAnnotation" in f for f in few.fixes)  # it has markers: no need to add them
    thin = check_evidence(_evidence(step_span_ms=MIN_STEP_COVERAGE_PERCENT * 10 - 1))
    assert not thin.enough and "window" in thin.reason
    assert any("Start the trace right before" in f for f in thin.fixes)
    assert check_evidence(_evidence(step_span_ms=50.0), verdict="compile-bound").enough  # window mostly compiling
    idle_device = _evidence(device_time_ms=MIN_DEVICE_TIME_MS / 2)
    assert check_evidence(idle_device, verdict="input-bound").enough  # input-bound jobs may barely use the device
    device = check_evidence(idle_device, verdict="device-bound")
    assert not device.enough and "device ran ops" in device.reason


def test_no_steps_at_all_is_not_enough():
    check = check_evidence(_evidence(steps=0, step_span_ms=0.0, has_step_markers=False))
    assert not check.enough and "0 step(s)" in check.reason
    assert check.to_dict()["evidence"]["step_coverage_percent"] == 0.0


def test_the_issue_kernel_benchmark_figures_are_not_enough():
    # 3 program runs, 0.6 ms of device time in a 0.7 s window (the steps span about their own runs)
    kernel = Evidence(steps=3, step_span_ms=0.6, window_ms=700.0, device_time_ms=0.6, has_step_markers=False)
    for verdict in (None, "host-bound", "device-bound"):
        check = check_evidence(kernel, verdict=verdict)
        assert not check.enough and "3 step(s)" in check.reason and "window" in check.reason
    assert "device ran ops for 0.6 ms" in check_evidence(kernel, verdict="device-bound").reason


def test_below_the_minimum_no_finding_is_high_and_the_cap_is_recorded():
    """90 % input in 3 steps over a tenth of the window: input-bound would be a HIGH finding; with so
    little evidence it is MEDIUM (its original severity kept) and the verdict is unknown."""
    from tpudoctor.findings import Status
    from tpudoctor.profile.host_result import BreakdownFigures, HostResult, StepFigures
    from tpudoctor.profile.pipeline import combine

    def host(steps: int, span_ms: float) -> HostResult:
        return HostResult("h", steps=StepFigures("host-step-annotations", steps),
                          breakdown=BreakdownFigures("host-loop-timeline", percent={"input": 90.0, "compute": 10.0}),
                          evidence=Evidence(steps=steps, step_span_ms=span_ms, window_ms=1000.0, device_time_ms=100.0,
                                            has_step_markers=True))

    enough = combine([host(20, 900.0)])
    assert enough.verdict == "input-bound"
    assert next(f for f in enough.findings if f.id == "input-bound").severity is Severity.HIGH

    thin = combine([host(3, 100.0)])
    assert thin.verdict == "unknown" and thin.verdict_reason.startswith("Not enough evidence to judge")
    assert thin.findings[0].id == "insufficient-evidence"  # why there is no verdict comes first
    assert all(f.severity.rank < Severity.HIGH.rank and f.status is not Status.FAIL for f in thin.findings)
    capped = next(f for f in thin.findings if f.id == "input-bound")
    assert capped.evidence["severity_before_evidence_cap"] == "high"


def test_no_steps_keeps_its_reason_and_is_capped_too():
    from tpudoctor.profile.host_result import BreakdownFigures, HostResult, StepFigures
    from tpudoctor.profile.pipeline import combine

    report = combine([HostResult("h", steps=StepFigures("none", 0, reason="no markers"),
                                 breakdown=BreakdownFigures("none", percent={"input": 90.0}),
                                 evidence=Evidence(steps=0, step_span_ms=0.0, window_ms=500.0, device_time_ms=0.0,
                                                   has_step_markers=False))])
    assert report.verdict == "unknown" and "cannot tell" in report.verdict_reason
    assert all(f.severity.rank < Severity.HIGH.rank for f in report.findings)
