from __future__ import annotations

from tpudoctor.check import Example
from tpudoctor.checks.logs._base import _LogDiagnosisCheck
from tpudoctor.checks.logs._examples import built_on_first_use, healthy_scan, scan_with
from tpudoctor.findings import Severity, Status

_OOM_LINE = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. "
             "Ran out of memory in memory space hbm. Used 20.54G of 15.48G hbm. Exceeded hbm capacity by 5.06G.")


class UserLogFilesDiagnosis(_LogDiagnosisCheck):
    """Your job's own logs (--log-file: a file, '-' for stdin, a FIFO, a folder) hold no error-level event.

    Tracebacks count as one event; the first fatal error in time is named as the root cause,
    with the numbers it carries (HBM used and capacity, a PID, a missing permission).
    """

    id = "LOGS-001"
    title = "Errors in the job log"
    fact_key = "logs.user_files"
    facts = ("logs.user_files", "tpu.node")
    severity = Severity.HIGH
    timeout_s = 30.0
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/troubleshooting"
    what = "log"
    sources_named_by_user = True
    examples = built_on_first_use(lambda: (
        Example("healthy training log", {"logs.user_files": healthy_scan()}, Status.PASS),
        Example("compile-time HBM OOM", {"logs.user_files": scan_with(_OOM_LINE)}, Status.FAIL),
        Example("only a warning", {"logs.user_files": scan_with(
            "W0501 10:00:01.000000 42 cloud_tpu_init.py:80] Transparent hugepages are not enabled.")}, Status.WARN),
        Example("socket closed on a preempted node", {
            "logs.user_files": scan_with("E0501 10:00:01.000000 42 rpc.cc:9] Unavailable: Socket closed"),
            "tpu.node": {"state": "PREEMPTED", "health": None, "symptoms": []},
        }, Status.FAIL),
        Example("a crash no signature knows", {"logs.user_files": scan_with(
            "Traceback (most recent call last):", '  File "/home/me/data.py", line 91, in collate',
            "KeyError: 'input_ids'")}, Status.WARN),
    ))
