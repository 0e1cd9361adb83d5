from __future__ import annotations

from tpudoctor.check import Example
from tpudoctor.checks.logs._base import _LogDiagnosisCheck
from tpudoctor.checks.logs._examples import built_on_first_use, healthy_scan, scan_with
from tpudoctor.findings import Severity, Status


class CloudLoggingDiagnosis(_LogDiagnosisCheck):
    """The node's Cloud Logging entries (resource tpu_worker, severity >= WARNING, within --since)
    show no known TPU failure."""

    id = "LOGS-003"
    title = "Errors in Cloud Logging"
    fact_key = "logs.cloud"
    facts = ("logs.cloud", "tpu.node")
    severity = Severity.HIGH
    timeout_s = 30.0
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/troubleshooting"
    what = "Cloud Logging entry"
    examples = built_on_first_use(lambda: (
        Example("no errors logged", {"logs.cloud": healthy_scan()}, Status.PASS),
        Example("barrier timeout", {"logs.cloud": scan_with(
            "E0501 10:00:01.000000 42 coordination.cc:9] Barrier timed out. Id: PjRT_Client_Connect. "
            "# of tasks that reached the barrier: 3/4.", source="cloud-logging:my-tpu/worker-0")}, Status.FAIL),
    ))
