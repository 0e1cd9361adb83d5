"""Device time spent copying to and from host memory (memory space S(5))."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import (
    BreakdownFigures,
    DeviceFigures,
    HostOpsFigures,
    HostResult,
)
from tpudoctor.profile.rule import SHARE_OF_STEP, Example, ProfileRule


def offload_share_of_step(host: HostResult) -> float:
    """The breakdown's host-offload part; without a TPU step breakdown, the copies' share of device
    time scaled by the duty cycle."""
    if host.breakdown.model == "tpu-step-breakdown":
        return host.breakdown.part("host_offload")
    return host.host_ops.host_offload_share_of_device_percent * host.device.duty_cycle_percent / 100


def _host(share_of_device: float, part: float) -> HostResult:
    return HostResult("h", device_kind="tpu", breakdown=BreakdownFigures(
        "tpu-step-breakdown", percent={"host_offload": part}),
        host_ops=HostOpsFigures(device_op_ms=1000.0, host_offload_device_ms=10 * share_of_device,
                                host_offload_share_of_device_percent=share_of_device,
                                table=[{"kind": "host-offload-copy", "name": "copy-done.5", "total_ms": 900.0}]),
        device=DeviceFigures(duty_cycle_percent=90.0))


class HostOffload(ProfileRule):
    """copy-start/copy-done to host memory space S(5) fill the device's time: the device mostly moves
    data over PCIe (flagged from 20 % of device op time)."""

    id = "host-offload"
    needs = ('steps', 'step-breakdown', 'device-ops')
    confidence_from = ('device-ops',)  # its severity: a share of device time
    title = "Host-offload copies do not dominate device time"
    bottleneck = "host-bound"
    scores_verdict = True
    lead_rank = 10
    HOST_OFFLOAD_PERCENT = 20.0
    docs = "https://jax.readthedocs.io/en/latest/notebooks/host-offloading.html"
    examples = (
        Example("no offload", _host(0.0, 0.0), Status.PASS),
        Example("offload dominates", _host(96.5, 90.3), Status.FAIL),
    )

    def evaluate(self, host: HostResult):
        ho = host.host_ops
        share = ho.host_offload_share_of_device_percent
        evidence = {"host_offload_device_ms": round(ho.host_offload_device_ms, 3), "device_op_ms": round(ho.device_op_ms, 3),
                    "share_of_device_percent": round(share, 2), SHARE_OF_STEP: round(offload_share_of_step(host), 2),
                    "top_copies": ho.rows("host-offload-copy")[:8]}
        if share < self.HOST_OFFLOAD_PERCENT:
            return self.passed(f"host-offload copies take {share:.1f}% of device time", evidence=evidence)
        return self.fired(
            Severity.HIGH, f"Host-offload copies take {share:.1f}% of device time",
            f"copy-start/copy-done to host memory space S(5) take {ho.host_offload_device_ms / 1e3:.2f} s of "
            f"{ho.device_op_ms / 1e3:.2f} s device op time: the device mostly moves data over PCIe.",
            evidence=evidence,
            fixes=("Offload fewer tensors (keep activations that fit in HBM on the device; prefer "
                   "rematerialisation, jax.checkpoint, over offloading when compute is cheap)",
                   "Overlap offload copies with compute (schedule copy-start early, copy-done late)",
                   "Use a larger batch per copy or a TPU with more HBM so the working set fits on the device"))
