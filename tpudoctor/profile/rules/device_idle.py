"""TensorCores idle between programs (xprof's non-input host overhead on TPU)."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import BreakdownFigures, HostResult
from tpudoctor.profile.rule import SHARE_OF_STEP, Example, ProfileRule


def _host(idle: float, model: str = "tpu-step-breakdown") -> HostResult:
    return HostResult("h", device_kind="tpu", breakdown=BreakdownFigures(
        model, percent={"idle": idle}, idle_gaps=[{"start_ms": 1.0, "duration_ms": 0.5}]))


class DeviceIdle(ProfileRule):
    """On TPU step breakdowns: the share of step time the TensorCores sit idle for host overhead
    that is not input (xprof flags it from 3 %; a bottleneck from 20 %)."""

    id = "device-idle"
    needs = ('steps', 'step-breakdown')
    title = "TensorCores are not idle between programs"
    bottleneck = "host-bound"
    scores_verdict = True
    lead_rank = 60
    TC_IDLE_PERCENT = 3.0
    BOUND_PERCENT = 20.0
    docs = "https://cloud.google.com/tpu/docs/performance-guide"
    examples = (
        Example("busy", _host(1.0), Status.PASS),
        Example("host-loop model is judged elsewhere", _host(50.0, "host-loop-timeline"), Status.PASS),
        Example("some idle", _host(8.0), Status.WARN),
        Example("mostly idle", _host(40.0), Status.FAIL),
    )

    def evaluate(self, host: HostResult):
        b = host.breakdown
        on_tpu = b.model == "tpu-step-breakdown"
        idle = b.part("idle") if on_tpu else 0.0
        evidence = {"idle_percent": round(idle, 2), SHARE_OF_STEP: round(idle, 2),
                    "largest_gaps_ms": [round(g["duration_ms"], 3) for g in b.idle_gaps[:5]]}
        if idle < self.TC_IDLE_PERCENT:
            return self.passed(f"TensorCores idle {idle:.1f}% of step time" if on_tpu
                               else "not a TPU step breakdown", evidence=evidence)
        return self.fired(
            Severity.HIGH if idle >= self.BOUND_PERCENT else Severity.MEDIUM,
            f"TensorCore idle {idle:.1f}% of step time",
            f"{idle:.1f} % of the total step time sampled is due to host overhead that is not input-related "
            "(the TensorCores wait between programs).", evidence=evidence,
            fixes=("Run several steps per host call (TF: steps_per_execution / a host training loop in one "
                   "tf.function; JAX: jax.lax.scan or fori_loop over micro-steps)",
                   "Avoid per-step host syncs: jax.device_get/np.asarray/.item()/block_until_ready inside the loop"))
