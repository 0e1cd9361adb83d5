from __future__ import annotations

from tpudoctor.check import Example
from tpudoctor.checks.slice._base import _WorkerProblemCheck
from tpudoctor.checks.slice._examples import from_files, unreadable, worker_report
from tpudoctor.findings import Status
from tpudoctor.pod.outcomes import REPORT_READABLE


class ReportsReadable(_WorkerProblemCheck):
    """Every worker's stored report can be read as a check report. One that cannot is ERROR, not FAIL:
    that worker's verdict is unknown, which says nothing yet about the worker itself."""

    id = REPORT_READABLE
    title = "Every worker's report is readable"
    docs = "https://cloud.google.com/tpu/docs/jax-pods"
    passed_message = "all {count} reports were read"
    examples = (
        Example("both readable", from_files(worker_report("0"), worker_report("1")), Status.PASS),
        Example("worker 1's file is not JSON", from_files(worker_report("0"), w1=unreadable("1")), Status.ERROR),
    )
