"""TensorFlow ops run eagerly, one by one from Python."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import HostOpsFigures, HostResult
from tpudoctor.profile.rule import Example, ProfileRule


def _host(eager_ms: float) -> HostResult:
    return HostResult("h", framework="tensorflow", window_ms=1000.0, host_ops=HostOpsFigures(eager_ms=eager_ms))


class EagerExecution(ProfileRule):
    """Share of the capture that runs TensorFlow ops eagerly (xprof flags eager execution from 10 %;
    high from 20 %)."""

    id = "eager-execution"
    needs = ('host-ops', 'window')
    title = "TensorFlow ops run inside tf.function"
    bottleneck = "host-bound"
    lead_rank = 30
    EAGER_PERCENT = 10.0
    BOUND_PERCENT = 20.0
    docs = "https://www.tensorflow.org/guide/function"
    examples = (
        Example("graph mode", _host(5.0), Status.PASS),
        Example("some eager", _host(150.0), Status.WARN),
        Example("eager loop", _host(600.0), Status.FAIL),
    )

    def evaluate(self, host: HostResult):
        ho = host.host_ops
        pct = 100 * ho.eager_ms / max(host.window_ms, 1e-9)
        evidence = {"eager_ms": round(ho.eager_ms, 3), "share_of_capture_percent": round(pct, 2)}
        if pct < self.EAGER_PERCENT:
            return self.passed(f"{pct:.1f}% of the capture runs ops eagerly", evidence=evidence)
        return self.fired(
            Severity.HIGH if pct >= self.BOUND_PERCENT else Severity.MEDIUM,
            f"{pct:.1f}% of the capture runs TensorFlow ops eagerly",
            f"{pct:.1f}% of Op time on the host used eager execution. Performance could be improved with tf.function.",
            evidence=evidence, fixes=("Wrap the step in @tf.function (or use Keras fit)",))
