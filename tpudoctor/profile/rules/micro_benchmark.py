"""A capture with no training loop: programs timed a few times each, a micro-benchmark."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import DeviceFigures, HostResult, StepFigures
from tpudoctor.profile.rule import Example, ProfileRule

MICRO_BENCHMARK_RULE = "micro-benchmark"
PREFIX = "micro-benchmark: no training loop: "  # analysis.steps.MICRO_BENCHMARK, as steps.reason starts
MAX_PROGRAMS_NAMED = 5


def _host(micro: bool) -> HostResult:
    programs = [{"program": "jit_dot(20)", "program_id": "20", "runs": 3, "devices": 1, "device_ms": 43.0,
                 "mean_ms": 14.3, "share_percent": 38.1},
                {"program": "jit_dot(18)", "program_id": "18", "runs": 3, "devices": 1, "device_ms": 26.3,
                 "mean_ms": 8.8, "share_percent": 23.3}]
    steps = (StepFigures("none", 0, "PjitFunction(dot)", reason="micro-benchmark: no training loop: no program "
                         "holds most of the device time", micro_benchmark=True) if micro
             else StepFigures("host-step-annotations", 10, "train"))
    return HostResult("h", steps=steps, device=DeviceFigures(programs=programs))


class MicroBenchmark(ProfileRule):
    """The capture has no training loop: no step markers, and the compiled programs' runs are not
    one step repeated (no program holds most of the device time, the largest ran fewer than 5 times,
    other programs interleave with no repeating pattern, or its runs keep no steady period;
    ``analysis.steps.check_loop``). Step-time verdicts do not apply: the verdict is ``unknown`` and
    what the capture tells is each program's device time."""

    id = MICRO_BENCHMARK_RULE
    needs = ("steps", "device-ops")
    confidence_from = ("device-ops", "window")  # it judges the program runs and their device time, not steps
    title = "The capture shows a training loop"
    lead_rank = 0
    docs = "https://docs.jax.dev/en/latest/profiling.html"
    examples = (
        Example("a training loop with step markers", _host(False), Status.PASS),
        Example("five dots and a conversion, each run three times", _host(True), Status.WARN),
    )

    def evaluate(self, host: HostResult):
        steps, programs = host.steps, host.device.programs
        evidence = {"reason": steps.reason, "loop": dict(steps.loop), "programs": programs[:20]}
        if not steps.micro_benchmark:
            return self.passed("steps from markers or a repeating program" if steps.count else "no program runs to judge",
                               evidence=evidence)
        named = ", ".join(f"{p['program']} {p['share_percent']:.1f}% ({p['runs']} run(s), "
                          f"{p['mean_ms']:.3g} ms each)" if p.get("mean_ms") is not None else
                          f"{p['program']} {p['share_percent']:.1f}%" for p in programs[:MAX_PROGRAMS_NAMED])
        more = f" and {len(programs) - MAX_PROGRAMS_NAMED} more" if len(programs) > MAX_PROGRAMS_NAMED else ""
        why = steps.reason.removeprefix(PREFIX)
        return self.fired(
            Severity.INFO, "Micro-benchmark: no training loop",
            why[:1].upper() + why[1:] + ". Step-time verdicts do not apply; device time by program: "
            + (named + more if named else "none measured") + ".",
            evidence=evidence,
            fixes=("Compare the programs by their device time (the programs table), not by step time",
                   "If this is a training loop, mark its steps: JAX `with jax.profiler.StepTraceAnnotation('train', "
                   "step_num=i):`, TensorFlow `tf.profiler.experimental.Trace('train', step_num=i, _r=1)`",
                   "To judge a training loop, capture 10 or more steps of it after warm-up"))
