"""What a hang capture gathers about each process: plain dataclasses, with ``to_dict``/``from_dict`` so a
worker's capture travels as JSON (the pod fan-out, ``--dump-dir`` and ``--replay``).

Stacks are py-spy's: innermost frame first. Times are UTC wall clock.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping
from typing import Any


def _time(value: str | None) -> _dt.datetime | None:
    return _dt.datetime.fromisoformat(value) if value else None


def _iso(value: _dt.datetime | None) -> str | None:
    return value.isoformat() if value else None


@dataclasses.dataclass(frozen=True)
class Frame:
    """One stack frame. ``native`` frames (py-spy ``--native``) name a C/C++ function and its library."""

    function: str
    file: str
    line: int
    native: bool = False
    code: str | None = None
    """The source line, read where the process runs (None for native frames or unreadable files)."""
    holding: tuple[str, ...] = ()
    """The ``with`` statements around this line that name a lock (``with self._lock:``): what the thread
    holds while it stands here."""

    @property
    def short_file(self) -> str:
        """``jax/_src/array.py`` rather than ``/usr/lib/python3.11/site-packages/jax/_src/array.py``."""
        for marker in ("/site-packages/", "/dist-packages/"):
            if marker in self.file:
                return self.file.rsplit(marker, 1)[1]
        for marker in ("/lib/python3", "/lib64/python3"):
            if marker in self.file:
                rest = self.file.rsplit(marker, 1)[1]
                return rest.split("/", 1)[1] if "/" in rest else rest
        return self.file

    @property
    def where(self) -> str:
        if self.native:
            return self.file.rsplit("/", 1)[-1] or "?"
        return f"{self.short_file}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"function": self.function, "file": self.file, "line": self.line}
        if self.native:
            data["native"] = True
        if self.code:
            data["code"] = self.code
        if self.holding:
            data["holding"] = list(self.holding)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Frame:
        return cls(function=str(data["function"]), file=str(data.get("file") or ""), line=int(data.get("line") or 0),
                   native=bool(data.get("native", False)), code=data.get("code"),
                   holding=tuple(data.get("holding") or ()))


@dataclasses.dataclass
class ThreadStack:
    tid: int
    """The OS thread id (``/proc/PID/task/TID``)."""
    name: str
    active: bool
    """py-spy's view: running (or runnable) when the stack was taken, not waiting."""
    owns_gil: bool
    frames: list[Frame]
    """Innermost first."""

    def to_dict(self) -> dict[str, Any]:
        return {"tid": self.tid, "name": self.name, "active": self.active, "owns_gil": self.owns_gil,
                "frames": [f.to_dict() for f in self.frames]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThreadStack:
        return cls(tid=int(data["tid"]), name=str(data.get("name") or ""), active=bool(data.get("active")),
                   owns_gil=bool(data.get("owns_gil")), frames=[Frame.from_dict(f) for f in data.get("frames") or []])


@dataclasses.dataclass
class StackSample:
    """One py-spy dump of one process."""

    taken_at: _dt.datetime
    seconds: float
    """How long the dump took (the process is paused for part of it)."""
    native: bool
    threads: list[ThreadStack]
    raw: str | None = dataclasses.field(default=None, repr=False, compare=False)
    """What py-spy printed (kept by ``--dump-dir``; not part of the report)."""

    def thread(self, tid: int) -> ThreadStack | None:
        return next((t for t in self.threads if t.tid == tid), None)

    def to_dict(self) -> dict[str, Any]:
        return {"taken_at": _iso(self.taken_at), "seconds": round(self.seconds, 4), "native": self.native,
                "threads": [t.to_dict() for t in self.threads]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StackSample:
        return cls(taken_at=_time(data["taken_at"]) or _dt.datetime.now(_dt.timezone.utc),
                   seconds=float(data.get("seconds") or 0.0), native=bool(data.get("native")),
                   threads=[ThreadStack.from_dict(t) for t in data.get("threads") or []])


@dataclasses.dataclass
class Counters:
    """The kernel's view of a process at one moment (``/proc/PID/stat``, ``/proc/PID/task/*/status``)."""

    taken_at: _dt.datetime
    state: str
    """R running, S sleeping, D disk wait, T stopped, Z zombie, ..."""
    cpu_s: float
    switches: dict[int, int]
    """Thread id -> context switches so far (voluntary + involuntary): a thread whose count does not move
    between two readings did not run at all in between."""

    def to_dict(self) -> dict[str, Any]:
        return {"taken_at": _iso(self.taken_at), "state": self.state, "cpu_s": round(self.cpu_s, 3),
                "switches": {str(k): v for k, v in self.switches.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Counters:
        return cls(taken_at=_time(data["taken_at"]) or _dt.datetime.now(_dt.timezone.utc),
                   state=str(data.get("state") or "?"), cpu_s=float(data.get("cpu_s") or 0.0),
                   switches={int(k): int(v) for k, v in (data.get("switches") or {}).items()})


@dataclasses.dataclass
class StepReading:
    """The last progress line of one log, read at one moment."""

    source: str
    step: float | None
    """The step counter (an epoch fraction for logs that count epochs only); None when no line was found."""
    line: str | None
    logged_at: _dt.datetime | None
    """The line's own time stamp, or the file's modification time when the line has none."""
    read_at: _dt.datetime
    seconds_per_step: float | None = None
    """The median time between recent steps, from the lines' time stamps or their ``seconds:`` fields."""
    format: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "step": self.step, "line": self.line, "logged_at": _iso(self.logged_at),
                "read_at": _iso(self.read_at), "seconds_per_step": self.seconds_per_step, "format": self.format}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepReading:
        return cls(source=str(data["source"]), step=data.get("step"), line=data.get("line"),
                   logged_at=_time(data.get("logged_at")),
                   read_at=_time(data.get("read_at")) or _dt.datetime.now(_dt.timezone.utc),
                   seconds_per_step=data.get("seconds_per_step"), format=data.get("format"))


@dataclasses.dataclass
class CaptureFailure:
    """Why a process's stacks could not be taken (all or part): ``kind`` is one of ``FAILURE_KINDS``."""

    kind: str
    message: str
    detail: str = ""
    """py-spy's own words."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "detail": self.detail}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> CaptureFailure | None:
        if not data:
            return None
        return cls(kind=str(data["kind"]), message=str(data.get("message") or ""), detail=str(data.get("detail") or ""))


FAILURE_KINDS = {
    "ptrace_denied": "no right to read the process (ptrace)",
    "pyspy_missing": "py-spy is not installed",
    "exited": "the process exited",
    "not_python": "not a Python process",
    "timeout": "py-spy did not answer in time",
    "error": "py-spy failed",
}


@dataclasses.dataclass
class ProcessCapture:
    """Everything gathered about one process of the job."""

    pid: int
    cmdline: str
    host: str
    worker: str | None = None
    selected_because: str = ""
    frameworks: list[str] = dataclasses.field(default_factory=list)
    devices: list[str] = dataclasses.field(default_factory=list)
    """TPU device files it holds (``/dev/accel0``, ``/dev/vfio/12``)."""
    log_files: list[str] = dataclasses.field(default_factory=list)
    samples: list[StackSample] = dataclasses.field(default_factory=list)
    native: StackSample | None = None
    """A ``--native`` dump, taken after the samples from a process that had not moved."""
    counters: list[Counters] = dataclasses.field(default_factory=list)
    steps: list[StepReading] = dataclasses.field(default_factory=list)
    """Readings of this process's logs, first and last (same sources)."""
    failure: CaptureFailure | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.worker or "", self.pid)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid, "cmdline": self.cmdline, "host": self.host, "worker": self.worker,
            "selected_because": self.selected_because, "frameworks": list(self.frameworks),
            "devices": list(self.devices), "log_files": list(self.log_files),
            "samples": [s.to_dict() for s in self.samples],
            "native": self.native.to_dict() if self.native else None,
            "counters": [c.to_dict() for c in self.counters],
            "steps": [s.to_dict() for s in self.steps],
            "failure": self.failure.to_dict() if self.failure else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProcessCapture:
        return cls(
            pid=int(data["pid"]), cmdline=str(data.get("cmdline") or ""), host=str(data.get("host") or ""),
            worker=None if data.get("worker") in (None, "") else str(data["worker"]),
            selected_because=str(data.get("selected_because") or ""),
            frameworks=list(data.get("frameworks") or []), devices=list(data.get("devices") or []),
            log_files=list(data.get("log_files") or []),
            samples=[StackSample.from_dict(s) for s in data.get("samples") or []],
            native=StackSample.from_dict(data["native"]) if data.get("native") else None,
            counters=[Counters.from_dict(c) for c in data.get("counters") or []],
            steps=[StepReading.from_dict(s) for s in data.get("steps") or []],
            failure=CaptureFailure.from_dict(data.get("failure")),
        )
