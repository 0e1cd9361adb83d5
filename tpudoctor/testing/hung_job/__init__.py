"""A real JAX training job to make hang, for the tests and benchmarks of ``tpudoctor hang``.

>>> with HungJob(tmp_path, processes=4) as job:      # four processes, gloo all-reduce every step
...     job.wait_for_steps(3)
...     with job.data_loader_stalled(process=2):      # process 2 blocks reading its next shard
...         ...                                       # the other three wait in the all-reduce
...     job.wait_for_steps(3)                         # released: the job moves again

The job (``train.py``) knows nothing about hangs. It hangs the way real jobs do, from outside: a shard
file it is about to read, the temporary file of its next checkpoint or its metrics file becomes a FIFO
that nobody opens (a read or a write that never returns; the metrics writer blocks while it holds the
lock the training loop needs), or its next batches ask for a device computation that runs for a long
time. Releasing opens the other end of the FIFO, so the job goes on.

JAX processes trap SIGTERM (the preemption notifier): ``stop`` kills them with SIGKILL, and leaving the
``with`` block always stops them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from tpudoctor.hang.procstat import read_counters
from tpudoctor.testing.hung_job import input_pipeline
from tpudoctor.testing.loopback import free_port

STEP_LINE = re.compile(r"completed step: (\d+), seconds: ([0-9.]+)")
START_TIMEOUT_S = 300.0


class JobFailed(RuntimeError):
    pass


class HungJob:
    def __init__(self, workdir: str | os.PathLike[str], processes: int = 4, *, step_pause_s: float = 0.1,
                 checkpoint_every: int = 5, python: str = sys.executable):
        self.workdir = Path(workdir)
        self.processes = processes
        self.step_pause_s = step_pause_s
        self.checkpoint_every = checkpoint_every
        self.python = python
        self.procs: list[subprocess.Popen] = []
        self._passes_per_s: float | None = None

    # -- life cycle ------------------------------------------------------------------------------
    def __enter__(self) -> HungJob:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        coordinator = f"127.0.0.1:{free_port()}"
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONUNBUFFERED": "1"}
        for i in range(self.processes):
            input_pipeline.write_shards(str(self.data_folder(i)))
            argv = [self.python, "-m", "tpudoctor.testing.hung_job.train", "--process-id", str(i),
                    "--processes", str(self.processes), "--coordinator", coordinator,
                    "--workdir", str(self.workdir), "--log-file", str(self.log_file(i)),
                    "--step-pause", str(self.step_pause_s), "--checkpoint-every", str(self.checkpoint_every)]
            with open(self.workdir / f"stdout-{i}.txt", "wb") as out:
                self.procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                                   stderr=subprocess.STDOUT, env=env))
        self.wait_for_steps(2, timeout_s=START_TIMEOUT_S)

    def stop(self) -> None:
        """SIGKILL every process (SIGTERM is trapped by JAX) and reap it; idempotent."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGKILL)
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    # -- where the job stands --------------------------------------------------------------------
    def data_folder(self, process: int) -> Path:
        return self.workdir / f"process-{process}" / "data"

    def log_file(self, process: int) -> Path:
        return self.workdir / f"train-{process}.log"

    def last_step(self, process: int) -> int | None:
        try:
            text = self.log_file(process).read_text(errors="replace")
        except OSError:
            return None
        steps = STEP_LINE.findall(text)
        return int(steps[-1][0]) if steps else None

    def last_steps(self) -> list[int | None]:
        return [self.last_step(i) for i in range(self.processes)]

    def _check_alive(self) -> None:
        dead = [(i, p.returncode) for i, p in enumerate(self.procs) if p.poll() is not None]
        if dead:
            i, code = dead[0]
            tail = (self.workdir / f"stdout-{i}.txt").read_text(errors="replace")[-2000:]
            raise JobFailed(f"process {i} exited with {code}:\n{tail}")

    def wait_for_steps(self, steps: int, *, timeout_s: float = 120.0) -> None:
        """Until every process has completed ``steps`` more steps."""
        start = [s if s is not None else -1 for s in self.last_steps()]
        deadline = time.monotonic() + timeout_s
        while True:
            self._check_alive()
            now = [s if s is not None else -1 for s in self.last_steps()]
            if all(n - s >= steps for n, s in zip(now, start, strict=True)):
                return
            if time.monotonic() > deadline:
                raise JobFailed(f"no progress in {timeout_s:g}s: steps {start} -> {now}")
            time.sleep(0.1)

    def wait_until_stalled(self, *, computing: int | None = None, quiet_s: float = 1.5,
                           timeout_s: float = 60.0) -> None:
        """Until no process has logged a step for ``quiet_s`` (each step takes about 0.1 s) and every process but
        ``computing`` (the one made to compute for long) has stopped computing: on a loaded machine a process starved of a core can sit inside a step for
        longer than ``quiet_s``, and a hang sampled then sees it elsewhere than in its wait."""
        deadline = time.monotonic() + timeout_s
        last, since = self.last_steps(), time.monotonic()
        while time.monotonic() < deadline:
            self._check_alive()
            time.sleep(0.1)
            now = self.last_steps()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s and self._idle(computing):
                return
        raise JobFailed(f"the job did not stall within {timeout_s:g}s")

    def _idle(self, computing: int | None, window_s: float = 1.0, busy_share: float = 0.1) -> bool:
        """Every process but ``computing`` used under ``busy_share`` of a core over ``window_s`` (its threads'
        CPU time)."""
        procs = [p for i, p in enumerate(self.procs) if i != computing]
        before = [read_counters(p.pid) for p in procs]
        time.sleep(window_s)
        after = [read_counters(p.pid) for p in procs]
        return all(b is None or a is None or a.cpu_s - b.cpu_s < busy_share * window_s
                   for b, a in zip(before, after, strict=True))

    # -- hangs -----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def data_loader_stalled(self, process: int) -> Iterator[None]:
        """Every shard of ``process`` becomes a FIFO: its next read blocks in ``open``."""
        folder = self.data_folder(process)
        paths = [input_pipeline.shard_path(str(folder), k) for k in range(input_pipeline.NUM_SHARDS)]
        for path in paths:
            _replace_with_fifo(path)
        try:
            self.wait_until_stalled()
            yield
        finally:
            blocked = _open_fifos_with_reader(paths)
            input_pipeline.write_shards(str(folder))  # regular files again for the steps after
            for fd, path in blocked:
                with contextlib.suppress(OSError):
                    os.write(fd, input_pipeline.shard_bytes(paths.index(path)))
                os.close(fd)

    @contextlib.contextmanager
    def checkpoint_stalled(self, process: int) -> Iterator[None]:
        """The temporary file of the next checkpoint becomes a FIFO: the save blocks in ``open``."""
        tmp = str(self.workdir / "checkpoints" / f"process-{process}.npy.tmp")
        _replace_with_fifo(tmp)
        try:
            self.wait_until_stalled()
            yield
        finally:
            _drain_fifo(tmp)

    @contextlib.contextmanager
    def metrics_lock_stalled(self, process: int) -> Iterator[None]:
        """The metrics file becomes a FIFO: the writer thread blocks in ``open`` while it holds the lock
        that the training loop needs to record the next step."""
        path = str(self.workdir / f"process-{process}" / "metrics.jsonl")
        _replace_with_fifo(path)
        try:
            self.wait_until_stalled()
            yield
        finally:
            _drain_fifo(path)

    @contextlib.contextmanager
    def device_step_stalled(self, process: int, seconds: float = 20.0) -> Iterator[None]:
        """The next batches of ``process`` ask for about ``seconds`` of device computation each: that process
        computes while the others wait for it in the all-reduce. The last long step ends by itself."""
        folder = str(self.data_folder(process))
        passes = max(1, int(self._device_passes_per_s(process) * seconds))
        input_pipeline.write_shards(folder, passes=passes)
        try:
            self.wait_until_stalled(computing=process)
            yield
        finally:
            input_pipeline.write_shards(folder)

    def _device_passes_per_s(self, process: int) -> float:
        """Measured once: one step of 200,000 passes, timed from the log's ``seconds:``."""
        if self._passes_per_s is None:
            probe = 200_000
            folder = str(self.data_folder(process))
            before = self.last_step(process) or 0
            input_pipeline.write_shards(folder, passes=probe)
            try:
                self.wait_for_steps(input_pipeline.NUM_SHARDS + 1, timeout_s=300)
            finally:
                input_pipeline.write_shards(folder)
            text = self.log_file(process).read_text(errors="replace")
            seconds = [float(s) for n, s in STEP_LINE.findall(text) if int(n) > before]
            self._passes_per_s = probe / max(max(seconds) - self.step_pause_s, 0.01)
        return self._passes_per_s


def _replace_with_fifo(path: str) -> None:
    """``path`` becomes a FIFO in one step: made beside it and renamed over it (an unlink then mkfifo raced
    the running job, whose next append re-created the file in between)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fifo = f"{path}.fifo-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(fifo)
    os.mkfifo(fifo)
    os.replace(fifo, path)


def _open_fifos_with_reader(paths: list[str]) -> list[tuple[int, str]]:
    """Write ends of the FIFOs a reader is blocked on (opening one without a reader fails: ENXIO)."""
    opened = []
    for path in paths:
        try:
            if not stat.S_ISFIFO(os.lstat(path).st_mode):
                continue
            opened.append((os.open(path, os.O_WRONLY | os.O_NONBLOCK), path))
        except OSError as exc:
            if exc.errno not in (errno.ENXIO, errno.ENOENT):
                raise
    return opened


def _drain_fifo(path: str) -> None:
    """Open the read end (the blocked writer goes on), read to the end in a thread, then put a regular
    file in the FIFO's place for the writes after."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return
    os.set_blocking(fd, True)

    def drain() -> None:
        with contextlib.suppress(OSError):
            while os.read(fd, 1 << 16):
                pass
        os.close(fd)

    threading.Thread(target=drain, daemon=True).start()
    tmp = f"{path}.restore"
    Path(tmp).write_bytes(b"")
    os.replace(tmp, path)
