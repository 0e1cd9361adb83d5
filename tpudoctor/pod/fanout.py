"""Run ``tpudoctor check --format json`` on every worker through ``gcloud compute tpus tpu-vm ssh --worker=N``.

One gcloud process per worker, at most ``parallel`` at a time, each in its own process group so that a
worker past its timeout is killed with everything it started (the ssh client included). Each worker's
stdout is read on its own pipe, never interleaved with another's. A worker that gives no report becomes
a finding scoped to it; the others still report.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime as _dt
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from tpudoctor.errors import InputError
from tpudoctor.findings import Finding, Remediation, Status
from tpudoctor.pod.outcomes import (
    TPUDOCTOR_INSTALLED,
    WORKER_ANSWERED,
    WorkerOutcome,
    worker_problem,
)

STDERR_TAIL_CHARS = 1500
KILL_GRACE_S = 2.0


@dataclasses.dataclass(frozen=True)
class SshTarget:
    """Where and how to reach the workers, in gcloud's own flags."""

    tpu: str
    zone: str
    project: str | None = None
    internal_ip: bool = False
    tunnel_through_iap: bool = False
    ssh_flags: tuple[str, ...] = ()
    gcloud: str = "gcloud"

    def __post_init__(self) -> None:
        from tpudoctor.resource_names import check_target_names

        check_target_names({"tpu": self.tpu, "zone": self.zone, "project": self.project},
                           {"tpu": "the TPU name", "zone": "the zone", "project": "the project"})

    def argv(self, worker: str, command: str) -> list[str]:
        argv = [self.gcloud, "compute", "tpus", "tpu-vm", "ssh", self.tpu, "--zone", self.zone]
        if self.project:
            argv += ["--project", self.project]
        argv += [f"--worker={worker}", "--quiet"]
        if self.internal_ip:
            argv.append("--internal-ip")
        if self.tunnel_through_iap:
            argv.append("--tunnel-through-iap")
        argv += [f"--ssh-flag={flag}" for flag in self.ssh_flags]
        return argv + ["--command", command]

    def shown(self, worker: str, command: str) -> str:
        """The same command for a person to paste (``gcloud`` by name, not the resolved path)."""
        return shlex.join([os.path.basename(self.gcloud), *self.argv(worker, command)[1:]])


@dataclasses.dataclass
class WorkerRun:
    worker: str
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    sent_at: _dt.datetime
    received_at: _dt.datetime
    duration_s: float


def run_one(worker: str, argv: Sequence[str], timeout_s: float) -> WorkerRun:
    """One worker's command; past ``timeout_s`` its whole process group is killed."""
    sent = _dt.datetime.now(_dt.timezone.utc)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return WorkerRun(worker, None, "", f"cannot start {argv[0]}: {exc}", False, sent,
                         _dt.datetime.now(_dt.timezone.utc), 0.0)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:  # a grandchild left its own group and holds the pipe: stop reading
            proc.kill()
            out, err = b"", b""
    received = _dt.datetime.now(_dt.timezone.utc)
    return WorkerRun(worker, None if timed_out else proc.returncode, _text(out), _text(err), timed_out, sent,
                     received, time.monotonic() - started)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def run_workers(workers: Sequence[str], argv_for: Callable[[str], Sequence[str]], *, timeout_s: float,
                parallel: int, progress: Callable[[str], None] | None = None) -> dict[str, WorkerRun]:
    """Every worker's run, ``parallel`` at a time; ``progress`` hears how many are still out."""
    runs: dict[str, WorkerRun] = {}
    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(parallel, len(workers)))) as pool:
        futures = {pool.submit(run_one, w, argv_for(w), timeout_s): w for w in workers}
        for future in concurrent.futures.as_completed(futures):
            run = future.result()
            with lock:
                runs[run.worker] = run
                waiting = [w for w in workers if w not in runs]
            if progress:
                tail = f"; waiting for {_few(waiting)}" if waiting else ""
                progress(f"{len(runs)} of {len(workers)} workers answered{tail}")
    return {w: runs[w] for w in workers}


def _few(workers: list[str]) -> str:
    from tpudoctor.pod.worker_ids import describe_workers

    return f"worker(s) {describe_workers(workers, limit=6)}"


def outcome_of(run: WorkerRun, target: SshTarget, *, timeout_s: float) -> WorkerOutcome:
    """The worker's report, or the finding that says why there is none (with the fix)."""
    from tpudoctor.pod.documents import report_from_output

    source = f"gcloud ssh worker {run.worker}"
    common = dict(source=source, sent_at=run.sent_at, received_at=run.received_at)
    problem = run_problem(run, target, timeout_s=timeout_s, command="tpudoctor check --format json")
    if problem is not None:
        return WorkerOutcome(run.worker, **common, problem=problem)
    try:
        report, document = report_from_output(run.stdout, source)
    except InputError as exc:
        return WorkerOutcome(run.worker, **common, problem=unreadable_answer(run, target, exc.message,
                                                                             command="tpudoctor check --format json",
                                                                             what="check report"))
    return WorkerOutcome(run.worker, report=report, document=document, **common)


def _evidence(run: WorkerRun) -> dict:
    return {"worker": run.worker, "exit_code": run.returncode, "stderr_tail": run.stderr[-STDERR_TAIL_CHARS:].strip(),
            "seconds": round(run.duration_s, 3)}


def run_problem(run: WorkerRun, target: SshTarget, *, timeout_s: float, command: str) -> Finding | None:
    """Why a worker's run gave no answer to read (no answer in time, no tpudoctor, ssh failed), as a finding
    scoped to it with the fix; None when its output is worth reading. ``command`` is what it was asked to run."""
    err_tail = run.stderr[-STDERR_TAIL_CHARS:].strip()
    evidence = _evidence(run)
    check_worker = target.shown(run.worker, "uptime; pgrep -af tpudoctor; df -h /tmp")
    if run.timed_out:
        return worker_problem(
            WORKER_ANSWERED, "Every worker answered", run.worker, Status.FAIL,
            f"no answer within {timeout_s:g}s (the worker or its ssh session hangs)", evidence=evidence,
            remediation=Remediation(
                text="The worker did not finish in time: it may be down, overloaded or stuck on a hung "
                     "process. Look at it, and at the node's state.",
                commands=(check_worker, _describe(target))))
    if run.returncode == 127 or "tpudoctor: command not found" in run.stderr or (
            "tpudoctor: not found" in run.stderr):
        return worker_problem(
            TPUDOCTOR_INSTALLED, "tpudoctor is installed on every worker", run.worker, Status.FAIL,
            "tpudoctor is not installed (or not on the login PATH)", evidence=evidence,
            remediation=Remediation(
                text=f"Install tpudoctor on every worker of the slice, then run {command.split(' --', 1)[0]} again.",
                commands=(target.shown("all", "pip install tpudoctor"),)))
    if run.returncode == 255 or run.returncode is None:
        return worker_problem(
            WORKER_ANSWERED, "Every worker answered", run.worker, Status.FAIL,
            f"gcloud ssh to worker {run.worker} failed: {_last_line(err_tail) or 'no message'}", evidence=evidence,
            remediation=Remediation(
                text="ssh did not connect. Without an external IP, tunnel through IAP (or use --internal-ip "
                     "from inside the VPC); check that a firewall rule allows port 22 to the workers.",
                commands=(target.shown(run.worker, "true") + " --tunnel-through-iap", _describe(target))))
    return None


def unreadable_answer(run: WorkerRun, target: SshTarget, reason: str, *, command: str, what: str) -> Finding:
    """A worker answered but its output holds no readable document."""
    return worker_problem(
        WORKER_ANSWERED, "Every worker answered", run.worker, Status.ERROR,
        f"worker {run.worker} answered (exit {run.returncode}) but sent no readable {what}: "
        f"{_last_line(run.stderr[-STDERR_TAIL_CHARS:].strip()) or reason}",
        evidence=_evidence(run) | {"stdout_head": run.stdout[:400]},
        remediation=Remediation(text="Run the command on that worker by hand and read its error.",
                                commands=(target.shown(run.worker, command),)))


def _describe(target: SshTarget) -> str:
    argv = ["gcloud", "compute", "tpus", "tpu-vm", "describe", target.tpu, "--zone", target.zone]
    if target.project:
        argv += ["--project", target.project]
    return shlex.join(argv)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
