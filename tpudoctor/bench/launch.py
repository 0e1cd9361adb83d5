"""Runs a reference model in a subprocess with a hard timeout and streams its result lines.

Used by ``tpudoctor bench`` and by step 5. A subprocess keeps TensorFlow out of tpudoctor's
own process, lets a hung TPU runtime be killed, and gives the full output for the log catalog.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tpudoctor.reference_models import result_log

OUTPUT_TAIL_LINES = 400
RUNNER_MODULE = "tpudoctor.reference_models.run"

EventCallback = Callable[[dict[str, Any]], None]


@dataclasses.dataclass
class RunRequest:
    model: str = "dense"
    framework: str = "tensorflow"
    steps: int = 20
    repeats: int = 8
    batch_size: int | None = None
    accelerator: str = "auto"
    data_dir: str | None = None
    profile_dir: str | None = None
    step_delay_ms: float = 0.0

    def argv(self, python: str) -> list[str]:
        argv = [python, "-m", RUNNER_MODULE, "--model", self.model, "--framework", self.framework,
                "--steps", str(self.steps),
                "--repeats", str(self.repeats), "--accelerator", self.accelerator]
        if self.batch_size:
            argv += ["--batch-size", str(self.batch_size)]
        if self.data_dir:
            argv += ["--data-dir", self.data_dir]
        if self.profile_dir:
            argv += ["--profile", self.profile_dir]
        if self.step_delay_ms:
            argv += ["--step-delay-ms", repr(float(self.step_delay_ms))]
        return argv


@dataclasses.dataclass
class RunOutcome:
    command: list[str]
    started: bool
    returncode: int | None
    timed_out: bool
    timeout_s: float
    duration_s: float
    events: list[dict[str, Any]]
    output_tail: str
    start_error: str | None = None

    def event(self, key: str) -> dict[str, Any] | None:
        """The value of the last event with this key."""
        for event in reversed(self.events):
            if event.get("key") == key:
                return event.get("value")
        return None

    @property
    def result(self) -> dict[str, Any] | None:
        return self.event(result_log.RUN_RESULT)

    @property
    def error(self) -> dict[str, Any] | None:
        return self.event(result_log.RUN_ERROR)

    def to_fact(self) -> dict[str, Any]:
        return {
            "command": list(self.command),
            "started": self.started,
            "start_error": self.start_error,
            "returncode": self.returncode,
            "timed_out": self.timed_out,
            "timeout_s": self.timeout_s,
            "duration_s": round(self.duration_s, 3),
            "result": self.result,
            "error": self.error,
            "compile": self.event(result_log.COMPILE),
            "output_tail": self.output_tail,
        }


def tensorflow_installed(python: str | None = None) -> bool:
    """Whether the interpreter that will run the model can import TensorFlow (found, not imported)."""
    return framework_installed("tensorflow", python)


def framework_installed(framework: str, python: str | None = None) -> bool:
    if python and python != sys.executable:
        return True  # another interpreter: let the run itself say
    return importlib.util.find_spec(framework) is not None


def launch(request: RunRequest, *, timeout_s: float, on_event: EventCallback | None = None,
           python: str | None = None, env: dict[str, str] | None = None) -> RunOutcome:
    command = request.argv(python or sys.executable)
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    child_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True, errors="replace", env=child_env, start_new_session=True,
        )
    except OSError as exc:
        return RunOutcome(command, False, None, False, timeout_s, time.monotonic() - started, [], "",
                          start_error=f"{type(exc).__name__}: {exc}")
    tail: collections.deque[str] = collections.deque(maxlen=OUTPUT_TAIL_LINES)
    events: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail.append(line.rstrip("\n"))
            event = result_log.parse_line(line)
            if event is not None:
                events.append(event)
                if on_event is not None:
                    on_event(event)

    reader = threading.Thread(target=read, daemon=True, name="reference-run-output")
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    except BaseException:
        _kill_group(proc)
        raise
    reader.join(5.0)
    return RunOutcome(command, True, proc.returncode, timed_out, timeout_s, time.monotonic() - started,
                      events, "\n".join(tail))


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """Kill the run and anything it started (it leads its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait(10.0)
