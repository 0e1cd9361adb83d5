"""The device computes most of the step: make the model itself faster."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import BreakdownFigures, HostResult
from tpudoctor.profile.rule import SHARE_OF_STEP, Example, ProfileRule
from tpudoctor.profile.rules.host_offload import offload_share_of_step


def device_share_of_step(host: HostResult) -> float:
    """Compute's part of the step; copies to host memory count as waiting on the host link, not
    computing (the TPU breakdown has them as their own part already)."""
    compute = host.breakdown.part("compute")
    if host.breakdown.model != "tpu-step-breakdown":
        compute -= offload_share_of_step(host)
    return max(compute, 0.0)


def _host(compute: float) -> HostResult:
    return HostResult("h", breakdown=BreakdownFigures("host-loop-timeline", percent={"compute": compute}))


class DeviceBound(ProfileRule):
    """The device computes most of each step (from 50 % of step time): input and host are not the
    problem, the model's own ops are."""

    id = "device-bound"
    needs = ('steps', 'step-breakdown', 'device-ops')
    title = "Device compute does not dominate the step"
    bottleneck = "device-bound"
    scores_verdict = True
    lead_rank = 10
    DEVICE_BOUND_PERCENT = 50.0
    docs = "https://cloud.google.com/tpu/docs/performance-guide"
    examples = (
        Example("host-dominated", _host(10.0), Status.PASS),
        Example("device computes", _host(85.0), Status.WARN),
    )

    def evaluate(self, host: HostResult):
        share = device_share_of_step(host)
        evidence = {SHARE_OF_STEP: round(share, 2), "top_ops": host.device.top_ops[:5]}
        if share < self.DEVICE_BOUND_PERCENT:
            return self.passed(f"the device computes {share:.1f}% of step time", evidence=evidence)
        return self.fired(
            Severity.INFO, f"Device-bound: the device computes {share:.1f}% of step time",
            "Input and host overhead are not the bottleneck; the time goes to the model's own device ops "
            "(see the top ops).", evidence=evidence,
            fixes=("Start with the top device ops by self time: fuse, remove or shrink the largest",
                   "Use bfloat16 for matmuls and convolutions, and batch and feature sizes that are multiples of 128",
                   "Raise the batch size if memory allows, so each step does more work per launch"))
