"""Steps found from markers, from repeated program runs, or not at all."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import HostResult, StepFigures
from tpudoctor.profile.rule import Example, ProfileRule

PSEUDO_METHODS = ("pseudo-steps-xla-modules", "pseudo-steps-host-program-runs")
MARKER_FIXES = ("JAX: wrap each step in `with jax.profiler.StepTraceAnnotation('train', step_num=i):`",
                "TensorFlow: `with tf.profiler.experimental.Trace('train', step_num=i, _r=1):`, or use Keras fit")


class NoStepMarkers(ProfileRule):
    """The capture marks its training steps; without markers steps are taken from repeated program
    runs (a guess), and without any step the bottleneck cannot be told."""

    id = "no-step-markers"
    needs = ('steps',)
    title = "Steps are marked in the capture"
    docs = "https://www.tensorflow.org/guide/profiler#profiling_custom_training_loops"
    examples = (
        Example("device steps line", HostResult("h", steps=StepFigures("device-steps-line", 10)), Status.PASS),
        Example("pseudo-steps", HostResult("h", steps=StepFigures("pseudo-steps-xla-modules", 10, "jit_f(1)")),
                    Status.WARN),
        Example("no steps", HostResult("h", steps=StepFigures("none", 0, reason="no markers")), Status.WARN),
    )

    def evaluate(self, host: HostResult):
        steps = host.steps
        evidence = {"method": steps.method, "program": steps.program, "steps": steps.count}
        if steps.micro_benchmark:  # no loop to mark: the micro-benchmark finding says so
            return self.passed("no training loop: see micro-benchmark", evidence=evidence)
        if steps.count == 0:
            return self.fired(
                Severity.MEDIUM, "No steps found: the bottleneck cannot be told",
                "No step time measured. Therefore we cannot tell where the performance bottleneck is. "
                + steps.reason, evidence=evidence,
                fixes=(*MARKER_FIXES, "Capture while the training loop runs (several steps), not before or after it"))
        if steps.method in PSEUDO_METHODS:
            return self.fired(
                Severity.INFO, "No step markers: steps taken from repeated program runs",
                f"The capture has no Steps line or step annotation; each run of {steps.program} counts as one step "
                f"({steps.count} steps).", evidence=evidence, fixes=MARKER_FIXES)
        return self.passed(f"{steps.count} steps found by {steps.method}", evidence=evidence)
