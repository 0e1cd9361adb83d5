"""Python callbacks inside the step (jax.debug.print, pure_callback, io_callback)."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import BreakdownFigures, HostOpsFigures, HostResult
from tpudoctor.profile.rule import SHARE_OF_STEP, Example, ProfileRule


def _host(callback_ms: float) -> HostResult:
    return HostResult("h", breakdown=BreakdownFigures(
        "host-loop-timeline", percent={"host_callback": callback_ms / 10},
        per_step=[{"step_ms": 100.0}] * 10),
        host_ops=HostOpsFigures(callback_ms=callback_ms,
                                table=[{"kind": "host-callback", "name": "pure_callback", "total_ms": callback_ms}]))


class HostCallback(ProfileRule):
    """Host callbacks stop the device while Python runs inside the step (flagged from 5 % of step
    time, a bottleneck from 20 %)."""

    id = "host-callback"
    needs = ('steps', 'step-breakdown', 'host-ops')
    title = "No host callbacks in the step"
    bottleneck = "host-bound"
    scores_verdict = True
    lead_rank = 20
    CALLBACK_PERCENT = 5.0
    BOUND_PERCENT = 20.0
    docs = "https://jax.readthedocs.io/en/latest/notebooks/external_callbacks.html"
    examples = (
        Example("no callbacks", _host(0.0), Status.PASS),
        Example("a few", _host(80.0), Status.WARN),
        Example("callback-bound", _host(400.0), Status.FAIL),
    )

    def evaluate(self, host: HostResult):
        ho, b = host.host_ops, host.breakdown
        step_total_ms = b.step_total_ms
        pct = max(b.part("host_callback"), 100 * ho.callback_ms / step_total_ms if step_total_ms > 0 else 0.0)
        evidence = {"callback_percent": round(pct, 2), SHARE_OF_STEP: round(pct, 2),
                    "callback_ms": round(ho.callback_ms, 3), "callbacks": ho.rows("host-callback")[:8]}
        if pct < self.CALLBACK_PERCENT:
            return self.passed(f"host callbacks take {pct:.1f}% of step time", evidence=evidence)
        return self.fired(
            Severity.HIGH if pct >= self.BOUND_PERCENT else Severity.MEDIUM,
            f"Host callbacks take {pct:.1f}% of step time",
            "The device stops and waits while Python runs inside the step (jax.debug.print, pure_callback, "
            "io_callback).", evidence=evidence,
            fixes=("Remove jax.debug.print / callbacks from the hot step, or run them every N steps under lax.cond",
                   "Return metrics from the step and log them on the host asynchronously (every N steps)",
                   "If a callback is needed, make it cheap and use io_callback(..., ordered=False)"))
