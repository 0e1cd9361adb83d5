"""Host-driven loops whose steps are mostly host Python the device waits for."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import BreakdownFigures, HostResult
from tpudoctor.profile.rule import SHARE_OF_STEP, Example, ProfileRule


def _host(idle: float, callback: float = 0.0) -> HostResult:
    return HostResult("h", breakdown=BreakdownFigures("host-loop-timeline",
                                                      percent={"idle": idle, "host_callback": callback}))


class HostOverhead(ProfileRule):
    """On host-driven loops (CPU/GPU, or steps found on the host): the share of step time with neither
    device work nor input: host Python (dispatch, logging, syncs) while the device waits.

    Its ``share_of_step_percent`` is all host work the device waits for on that one timeline: this
    other host time plus host callbacks (the two never overlap there)."""

    id = "host-overhead"
    needs = ('steps', 'step-breakdown')
    title = "Steps are not dominated by host overhead"
    bottleneck = "host-bound"
    scores_verdict = True
    lead_rank = 50
    HOST_OVERHEAD_PERCENT = 20.0
    docs = "https://jax.readthedocs.io/en/latest/profiling.html"
    examples = (
        Example("little overhead", _host(5.0), Status.PASS),
        Example("host python dominates", _host(45.0, 3.0), Status.FAIL),
    )

    def evaluate(self, host: HostResult):
        b = host.breakdown
        on_host_loop = b.model == "host-loop-timeline"
        idle = b.part("idle") if on_host_loop else 0.0
        callbacks = b.part("host_callback") if on_host_loop else 0.0
        evidence = {"host_other_percent": round(idle, 2), "host_callback_percent": round(callbacks, 2),
                    SHARE_OF_STEP: round(idle + callbacks, 2)}
        if idle < self.HOST_OVERHEAD_PERCENT:
            return self.passed(f"other host time {idle:.1f}% of step time", evidence=evidence)
        return self.fired(
            Severity.HIGH, f"Host overhead: {idle:.1f}% of step time has neither device work nor input",
            "The training loop spends this share of each step in host Python (dispatch, logging, syncs) "
            "while the device waits.", evidence=evidence,
            fixes=("Move per-step Python (logging, metric conversion, checkpoint checks) out of the step or do it "
                   "every N steps",
                   "Avoid per-step host syncs (np.asarray, .item(), block_until_ready)",
                   "Fuse several steps per call (jax.lax.scan, steps_per_execution)"))
