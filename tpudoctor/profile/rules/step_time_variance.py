"""Step times that vary a lot from step to step."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import HostResult, StepFigures
from tpudoctor.profile.rule import Example, ProfileRule


def _host(cv: float, count: int = 10) -> HostResult:
    return HostResult("h", steps=StepFigures("host-step-annotations", count, stats={
        "count": count, "mean_ms": 10.0, "median_ms": 10.0, "min_ms": 5.0, "max_ms": 20.0, "cv_percent": cv}))


class StepTimeVariance(ProfileRule):
    """Steps take very different times (coefficient of variation from 20 %, over at least 3 steps)."""

    id = "step-time-variance"
    needs = ('steps',)
    title = "Step time is steady"
    STEP_CV_PERCENT = 20.0
    MIN_STEPS = 3
    docs = "https://www.tensorflow.org/guide/profiler#input_pipeline_analyzer"
    examples = (
        Example("steady", _host(3.0), Status.PASS),
        Example("too few steps to tell", _host(80.0, count=2), Status.PASS),
        Example("jumpy", _host(45.0), Status.WARN),
    )

    def evaluate(self, host: HostResult):
        stats = host.steps.stats
        evidence = {k: round(v, 3) for k, v in stats.items()}
        if not stats or stats.get("count", 0) < self.MIN_STEPS or stats.get("cv_percent", 0) < self.STEP_CV_PERCENT:
            return self.passed("step time is steady or there are too few steps to tell", evidence=evidence)
        return self.fired(
            Severity.LOW, f"Step time varies (coefficient of variation {stats['cv_percent']:.0f}%)",
            f"Steps take {stats['min_ms']:.2f} to {stats['max_ms']:.2f} ms (median {stats['median_ms']:.2f} ms).",
            evidence=evidence,
            fixes=("Look at the slowest steps: compilation, checkpointing, evaluation or garbage collection inside them",))
