"""The one pod fan-out: run a ``tpudoctor`` subcommand on every worker of a slice, collect each worker's JSON
document (or the finding that says why there is none), and hand them to the command's merge.

    fan = FanOut(SshTarget(tpu="pod", zone=ZONE), ["0", "1"], timeout_s=300)
    merged = fan.run(WorkerCommand("check", argv_for, kind="check", what="check report"), merge)

``check --all-workers`` and ``hang --all-workers`` both run through it; a command gives three things: the
subcommand, each worker's command line (``Settings.worker_argv``: the worker has neither our config file nor
our environment) and a merge of the outcomes. How a worker is reached is a ``Reach``
(``tpudoctor.pod.reach``; gcloud's ssh today). A worker that gives no document (no answer in time, ssh
failed, no tpudoctor, output that is not a readable document) becomes a finding scoped to it; the others
still report. Every worker's process is bounded by ``timeout_s``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import shlex
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tpudoctor.errors import InputError
from tpudoctor.findings import Finding, Remediation, Status
from tpudoctor.pod.outcomes import (
    TPUDOCTOR_INSTALLED,
    WORKER_ANSWERED,
    WorkerOutcome,
    worker_problem,
)
from tpudoctor.pod.reach import (
    STDERR_TAIL_CHARS,
    Reach,
    SshTarget,
    WorkerRun,
    last_line,
    run_workers,
)

__all__ = ["FanOut", "Reach", "SshTarget", "WorkerCommand", "WorkerRun", "run_problem", "unreadable_answer"]

DEFAULT_PARALLEL = 64  # gcloud's own --worker=all contacts every worker at once
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class WorkerCommand:
    """What each worker runs and how its answer is read."""

    subcommand: str
    """``check``, ``hang``: the answer is that command's JSON document on stdout."""
    argv: Callable[[str], Sequence[str]]
    """A worker's whole command line, ``["tpudoctor", SUBCOMMAND, ...]`` (``Settings.worker_argv``)."""
    kind: str
    """The ``kind`` of the document the worker prints (the first JSON object of that kind is its answer)."""
    what: str
    """The document, in messages: ``check report``."""
    read: Callable[[dict[str, Any], str], Any] | None = None
    """Checks the document (an ``InputError`` makes the answer unreadable) and returns what the merge folds as
    the outcome's ``report`` (a check ``Report``), or None where the document is all the merge needs."""
    label: Callable[[str], str] | None = None
    """How messages about a worker's document name it (default: where it came from, ``gcloud ssh worker 3``)."""

    @property
    def line(self) -> str:
        """The command in fixes: ``tpudoctor check --format json``."""
        return f"tpudoctor {self.subcommand} --format json"


class FanOut:
    """One fan-out to ``workers`` through ``reach``: at most ``parallel`` at a time, each within ``timeout_s``."""

    def __init__(self, reach: Reach, workers: Sequence[str], *, timeout_s: float,
                 parallel: int = DEFAULT_PARALLEL, name: str = "the slice"):
        if timeout_s <= 0 or parallel < 1:
            raise ValueError(f"a fan-out needs a positive timeout and parallelism, got {timeout_s}, {parallel}")
        self.reach, self.workers, self.timeout_s, self.parallel, self.name = (
            reach, list(workers), float(timeout_s), int(parallel), name)
        self.started_at: _dt.datetime | None = None
        """When the last ``collect`` started (a merge's own start time)."""

    @property
    def via(self) -> str:
        """How the answers came, for the merged report's source."""
        return self.reach.via

    @property
    def worker_limit_s(self) -> float:
        """A limit for the worker's own run that ends before ours, so that a slow worker still sends what it has."""
        return max(1.0, self.timeout_s - min(10.0, self.timeout_s * 0.25))

    def run(self, command: WorkerCommand, merge: Callable[[list[WorkerOutcome]], T]) -> T:
        """Every worker's outcome, merged by ``merge``."""
        return merge(self.collect(command))

    def collect(self, command: WorkerCommand) -> list[WorkerOutcome]:
        """Each worker's outcome, in the order of ``workers``: its document, or the problem in its place."""
        from tpudoctor.progress import progress

        self.started_at = _dt.datetime.now(_dt.timezone.utc)
        with progress(f"tpudoctor {command.subcommand} on {len(self.workers)} workers of {self.name}") as update:
            runs = run_workers(self.workers, lambda w: self.reach.argv(w, shlex.join(command.argv(w))),
                               timeout_s=self.timeout_s, parallel=self.parallel, progress=update)
        return [self.outcome(run, command) for run in runs.values()]

    def outcome(self, run: WorkerRun, command: WorkerCommand) -> WorkerOutcome:
        """The worker's document (read by ``command.read``), or the finding that says why there is none."""
        from tpudoctor.pod.documents import document_from_output

        source = self.reach.source(run.worker)
        common: dict[str, Any] = dict(source=source, sent_at=run.sent_at, received_at=run.received_at)
        problem = run_problem(run, self.reach, timeout_s=self.timeout_s, command=command.line)
        if problem is not None:
            return WorkerOutcome(run.worker, **common, problem=problem)
        label = command.label(run.worker) if command.label else source
        try:
            document = document_from_output(run.stdout, label, kind=command.kind, what=command.what)
            report = command.read(document, label) if command.read else None
        except InputError as exc:
            reason = exc.message
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a document the reader did not expect
            reason = f"{label}: {type(exc).__name__}: {exc}"
        else:
            return WorkerOutcome(run.worker, report=report, document=document, **common)
        return WorkerOutcome(run.worker, **common, problem=unreadable_answer(run, self.reach, reason,
                                                                             command=command.line, what=command.what))


def _evidence(run: WorkerRun) -> dict:
    return {"worker": run.worker, "exit_code": run.returncode, "stderr_tail": run.stderr[-STDERR_TAIL_CHARS:].strip(),
            "seconds": round(run.duration_s, 3)}


def run_problem(run: WorkerRun, reach: Reach, *, timeout_s: float, command: str) -> Finding | None:
    """Why a worker's run gave no answer to read (no answer in time, no tpudoctor, not reached), as a finding
    scoped to it with the fix; None when its output is worth reading. ``command`` is what it was asked to run."""
    evidence = _evidence(run)
    check_worker = reach.shown(run.worker, "uptime; pgrep -af tpudoctor; df -h /tmp")
    if run.timed_out:
        return worker_problem(
            WORKER_ANSWERED, "Every worker answered", run.worker, Status.FAIL,
            f"no answer within {timeout_s:g}s (the worker or its ssh session hangs)", evidence=evidence,
            remediation=Remediation(
                text="The worker did not finish in time: it may be down, overloaded or stuck on a hung "
                     "process. Look at it, and at the node's state.",
                commands=(check_worker, reach.describe())))
    if run.returncode == 127 or "tpudoctor: command not found" in run.stderr or (
            "tpudoctor: not found" in run.stderr):
        return worker_problem(
            TPUDOCTOR_INSTALLED, "tpudoctor is installed on every worker", run.worker, Status.FAIL,
            "tpudoctor is not installed (or not on the login PATH)", evidence=evidence,
            remediation=Remediation(
                text=f"Install tpudoctor on every worker of the slice, then run {command.split(' --', 1)[0]} again.",
                commands=(reach.shown("all", "pip install tpudoctor"),)))
    failed = reach.not_connected(run)
    if failed is not None:
        message, remediation = failed
        return worker_problem(WORKER_ANSWERED, "Every worker answered", run.worker, Status.FAIL, message,
                              evidence=evidence, remediation=remediation)
    return None


def unreadable_answer(run: WorkerRun, reach: Reach, reason: str, *, command: str, what: str) -> Finding:
    """A worker answered but its output holds no readable document."""
    return worker_problem(
        WORKER_ANSWERED, "Every worker answered", run.worker, Status.ERROR,
        f"worker {run.worker} answered (exit {run.returncode}) but sent no readable {what}: "
        f"{last_line(run.stderr[-STDERR_TAIL_CHARS:].strip()) or reason}",
        evidence=_evidence(run) | {"stdout_head": run.stdout[:400]},
        remediation=Remediation(text="Run the command on that worker by hand and read its error.",
                                commands=(reach.shown(run.worker, command),)))
