from __future__ import annotations

from tpudoctor.check import Example
from tpudoctor.checks.slice._base import _WorkerProblemCheck
from tpudoctor.checks.slice._examples import fanned_out, no_tpudoctor, worker_report
from tpudoctor.findings import Status
from tpudoctor.pod.outcomes import TPUDOCTOR_INSTALLED


class TpudoctorInstalled(_WorkerProblemCheck):
    """tpudoctor is on the login PATH of every worker the fan-out reached (the workers without it are
    named, with the command that installs it on all of them)."""

    id = TPUDOCTOR_INSTALLED
    title = "tpudoctor is installed on every worker"
    docs = "https://cloud.google.com/tpu/docs/jax-pods"
    passed_message = "tpudoctor ran on every worker that answered ({count})"
    examples = (
        Example("installed everywhere", fanned_out(worker_report("0"), worker_report("1")), Status.PASS),
        Example("missing on worker 1", fanned_out(worker_report("0"), w1=no_tpudoctor("1")), Status.FAIL),
    )
