"""Device ops that run outside compilation (host send/recv inside the step)."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import HostOpsFigures, HostResult
from tpudoctor.profile.rule import Example, ProfileRule


class OutsideCompilation(ProfileRule):
    """Op time on the device spent on outside compilation (xprof flags it from 5 %)."""

    id = "outside-compilation"
    needs = ('device-ops',)
    title = "No outside compilation on the device"
    bottleneck = "host-bound"
    lead_rank = 45
    OUTSIDE_COMPILATION_PERCENT = 5.0
    docs = "https://cloud.google.com/tpu/docs/tensorflow-ops"
    examples = (
        Example("none", HostResult("h", host_ops=HostOpsFigures(outside_compilation_share_of_device_percent=0.0)),
                    Status.PASS),
        Example("some", HostResult("h", host_ops=HostOpsFigures(outside_compilation_share_of_device_percent=12.0)),
                    Status.WARN),
    )

    def evaluate(self, host: HostResult):
        share = host.host_ops.outside_compilation_share_of_device_percent
        evidence = {"share_of_device_percent": round(share, 2)}
        if share < self.OUTSIDE_COMPILATION_PERCENT:
            return self.passed(f"{share:.1f}% of device op time is outside compilation", evidence=evidence)
        return self.fired(
            Severity.MEDIUM, f"{share:.1f} % of op time on the device is outside compilation",
            f"{share:.1f} % of Op time on the device are for outside compilation. "
            "Performance could be improved by avoiding outside compilation.", evidence=evidence,
            fixes=("Replace ops that TPUs cannot run (strings, py_function, summaries) inside the step",))
