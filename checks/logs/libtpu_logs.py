from __future__ import annotations

from tpudoctor.check import Example
from tpudoctor.checks.logs._base import _LogDiagnosisCheck
from tpudoctor.checks.logs._examples import built_on_first_use, healthy_scan, scan_with
from tpudoctor.findings import Severity, Status


class LibtpuLogsDiagnosis(_LogDiagnosisCheck):
    """libtpu's own logs on this VM ($TPU_LOG_DIR or /tmp/tpu_logs, files changed within --since)
    show no known TPU failure."""

    id = "LOGS-002"
    title = "Errors in the libtpu logs"
    fact_key = "logs.libtpu"
    facts = ("logs.libtpu", "tpu.node")
    severity = Severity.HIGH
    timeout_s = 30.0
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/trouble-tf#debug_logs"
    what = "libtpu log"
    examples = built_on_first_use(lambda: (
        Example("healthy libtpu log", {"logs.libtpu": healthy_scan()}, Status.PASS),
        Example("TPU held by another process", {"logs.libtpu": scan_with(
            "E0501 10:00:01.000000 42 tpu_driver.cc:9] The TPU is already in use by process with pid 4242. "
            "Not attempting to load libtpu.so in this process.")}, Status.FAIL),
    ))
