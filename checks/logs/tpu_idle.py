from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

IDLE_DUTY_CYCLE_PERCENT = 30.0


def _monitoring(mean: float, by_worker: dict[str, float] | None = None) -> dict:
    return {"node_id": "my-tpu", "window_s": 3600.0, "duty_cycle_points": 60,
            "duty_cycle_mean_percent": mean, "duty_cycle_max_percent": mean,
            "duty_cycle_mean_percent_by_worker": by_worker or {"0": mean},
            "hbm_used_max_bytes": 20 * 2**30, "hbm_used_mean_bytes": 18 * 2**30, "hbm_total_bytes": 32 * 2**30}


class TpuNotMostlyIdle(Check):
    """The TPU was busy over the window: Cloud Monitoring's mean TensorCore duty cycle is at least 30 %.

    A node bills by the second whether it computes or waits; a mostly idle TPU usually means an
    input-bound job (or a job that stopped) while the node keeps costing money.
    """

    id = "LOGS-004"
    title = "TPU is not mostly idle"
    step = Step.LOGS
    facts = ("logs.monitoring",)
    severity = Severity.MEDIUM
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/tpu-vm-monitoring"
    examples = (
        Example("busy TPU", {"logs.monitoring": _monitoring(78.5)}, Status.PASS),
        Example("mostly idle TPU", {"logs.monitoring": _monitoring(12.0)}, Status.WARN),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        data = facts.require("logs.monitoring")
        mean = float(data["duty_cycle_mean_percent"])
        window_min = float(data.get("window_s") or 0) / 60
        evidence = {k: v for k, v in data.items() if v is not None}
        evidence["idle_threshold_percent"] = IDLE_DUTY_CYCLE_PERCENT
        used, total = data.get("hbm_used_max_bytes"), data.get("hbm_total_bytes")
        hbm = f"; peak HBM {used / 2**30:.1f} of {total / 2**30:.1f} GiB" if used and total else ""
        if mean >= IDLE_DUTY_CYCLE_PERCENT:
            return self.passed(f"mean TPU duty cycle {mean:.0f}% over the last {window_min:.0f} min{hbm}",
                               evidence=evidence)
        return self.warn(
            f"the TPU was mostly idle: mean duty cycle {mean:.0f}% over the last {window_min:.0f} min "
            f"(below {IDLE_DUTY_CYCLE_PERCENT:.0f}%){hbm}; you pay for idle TPU time",
            evidence=evidence,
            remediation=remediation(
                "Find what the TPU waits for (usually the input pipeline: prefetch, interleave, cache "
                "TFRecords from GCS) with a profile; stop or delete the node when no job runs.",
                "tpu-info  # live duty cycle and HBM per chip, while the job runs",
                "gcloud compute tpus tpu-vm stop NAME --zone ZONE",
            ),
        )
