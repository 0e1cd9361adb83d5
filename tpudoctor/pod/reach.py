"""How the fan-out reaches a worker: ``gcloud compute tpus tpu-vm ssh --worker=N``, one process per worker.

One process per worker, at most ``parallel`` at a time, each in its own process group so that a worker past
its timeout is killed with everything it started (the ssh client included). Each worker's stdout is read on
its own pipe, never interleaved with another's.

Only the fan-out (``tpudoctor.pod.fanout.FanOut``) imports this module (an import contract in
pyproject.toml): a command hands the fan-out what each worker runs and how to merge the answers; it never
starts a worker's process of its own.
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
from typing import Protocol

from tpudoctor.findings import Remediation

KILL_GRACE_S = 2.0
STDERR_TAIL_CHARS = 1500


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


class Reach(Protocol):
    """A way to run a command on a worker: what the fan-out needs of it (``SshTarget`` is gcloud's; another way,
    e.g. ``kubectl exec``, is one more class with these members)."""

    @property
    def via(self) -> str:
        """How the answers came, for the merged report (``gcloud compute tpus tpu-vm ssh pod --worker=N``)."""

    def source(self, worker: str) -> str:
        """Where one worker's answer came from (``gcloud ssh worker 3``)."""

    def argv(self, worker: str, command: str) -> list[str]:
        """The local process that runs the shell line ``command`` on ``worker``."""

    def shown(self, worker: str, command: str) -> str:
        """The same, for a person to paste (``worker`` may be ``all``)."""

    def describe(self) -> str:
        """The command that shows the node's state, for the fixes."""

    def not_connected(self, run: WorkerRun) -> tuple[str, Remediation] | None:
        """Why the worker could not be reached at all (message, fix), or None when it was."""


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

    @property
    def via(self) -> str:
        return f"gcloud compute tpus tpu-vm ssh {self.tpu} --worker=N"

    def source(self, worker: str) -> str:
        return f"gcloud ssh worker {worker}"

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

    def describe(self) -> str:
        argv = ["gcloud", "compute", "tpus", "tpu-vm", "describe", self.tpu, "--zone", self.zone]
        if self.project:
            argv += ["--project", self.project]
        return shlex.join(argv)

    def not_connected(self, run: WorkerRun) -> tuple[str, Remediation] | None:
        """ssh's own exit status 255 (or no process at all): the connection failed."""
        if run.returncode not in (255, None):
            return None
        said = last_line(run.stderr[-STDERR_TAIL_CHARS:].strip()) or "no message"
        return (f"gcloud ssh to worker {run.worker} failed: {said}",
                Remediation(text="ssh did not connect. Without an external IP, tunnel through IAP (or use --internal-ip "
                                 "from inside the VPC); check that a firewall rule allows port 22 to the workers.",
                            commands=(self.shown(run.worker, "true") + " --tunnel-through-iap", self.describe())))


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


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
