"""Example facts for the slice checks: workers' outcomes as the fan-out and the report store make them."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any

from tpudoctor.findings import Finding, Remediation, Report, Severity, Status, Step, Target
from tpudoctor.pod.outcomes import WorkerOutcome, worker_problem

STARTED = _dt.datetime(2026, 5, 1, 10, 0, 0, tzinfo=_dt.timezone.utc)


def worker_report(worker: str, *, results: tuple[Finding, ...] = (), packages: dict[str, str] | None = None,
           python: str = "3.11.9", started_at: _dt.datetime = STARTED, duration_s: float = 20.0) -> Report:
    return Report(results=list(results), target=Target(tpu="my-pod", zone="us-central2-b", worker=worker),
                  host=f"t1v-n-0-w-{worker}", started_at=started_at, duration_s=duration_s, tool_version="0.9.0",
                  environment={"worker": worker, "slice_workers": 2, "python": python,
                               "packages": packages or {"jax": "0.4.35", "jaxlib": "0.4.35", "libtpu": "0.0.5"}})


def fanned_out(*reports: Report, **problems: Finding) -> dict[str, Any]:
    """Outcomes of a fan-out that sent each command at STARTED and got each answer 30 s later."""
    sent, received = STARTED - _dt.timedelta(seconds=1), STARTED + _dt.timedelta(seconds=30)
    outcomes = {r.target.worker: WorkerOutcome(r.target.worker, report=r, sent_at=sent, received_at=received)
                for r in reports}
    outcomes |= {w.removeprefix("w"): WorkerOutcome(w.removeprefix("w"), sent_at=sent, problem=p)
                 for w, p in problems.items()}
    return {"slice.outcomes": dict(sorted(outcomes.items())), "slice.expected_workers": sorted(outcomes),
            "slice.target": Target(tpu="my-pod", zone="us-central2-b", project="p")}


def from_files(*reports: Report, expected: tuple[str, ...] = ("0", "1"), **problems: Finding) -> dict[str, Any]:
    """Outcomes read from stored reports (no fan-out: no send or receive time)."""
    facts = fanned_out(*reports, **problems)
    facts["slice.outcomes"] = {w: dataclasses.replace(o, sent_at=None, received_at=None)
                               for w, o in facts["slice.outcomes"].items()}
    facts["slice.expected_workers"] = list(expected)
    return facts


def no_answer(worker: str) -> Finding:
    return worker_problem("POD-001", "Every worker answered", worker, Status.FAIL,
                          "no answer within 120s (the worker or its ssh session hangs)",
                          remediation=Remediation(text="Look at the worker and at the node's state."))


def no_tpudoctor(worker: str) -> Finding:
    return worker_problem("POD-002", "tpudoctor is installed on every worker", worker, Status.FAIL,
                          "tpudoctor is not installed (or not on the login PATH)",
                          remediation=Remediation(text="Install tpudoctor on every worker of the slice."))


def unreadable(worker: str) -> Finding:
    return worker_problem("POD-007", "Every worker's report is readable", worker, Status.ERROR,
                          f"{worker}.json is not valid JSON", remediation=Remediation(text="Read it by hand."))


def log_failure(signature: str, message: str, timestamp: str | None) -> Finding:
    evidence: dict[str, Any] = {"signature": signature}
    if timestamp:
        evidence["first_timestamp"] = timestamp
    return Finding(id="LOGS-003", step=Step.LOGS, title="Your job's log files", status=Status.FAIL, message=message,
                   severity=Severity.CRITICAL, evidence=evidence,
                   remediation=Remediation(text="Lower the batch size or shard the model over more chips."))


def logs_read() -> Finding:
    return Finding(id="LOGS-003", step=Step.LOGS, title="Your job's log files", status=Status.PASS,
                   message="no error in 2 log lines", severity=Severity.INFO)


def logs_templated(*templates: tuple[str, int, bool]) -> Finding:
    """A worker's log check with its log's template summary (template, count, error) as ``check --worker`` writes."""
    top = [{"template": t, "count": n, "error": e} for t, n, e in templates]
    return Finding(id="LOGS-001", step=Step.LOGS, title="Errors in the job log", status=Status.PASS,
                   message="no error-level event in 40 log lines", severity=Severity.INFO,
                   evidence={"log_templates": {"log": "train.log", "templates_total": len(top), "top": top}})
