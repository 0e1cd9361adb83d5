"""Every thread's stack of a live process, taken with py-spy (``py-spy dump --json``).

py-spy reads the process's memory from outside; without ``--nonblocking`` it pauses the process while it
reads, so the stack is consistent: a few milliseconds for the Python frames; with ``--native`` it also
unwinds the C/C++ frames (a pause of about 0.1 s for a JAX process, and a second or two of symbol loading
outside the pause; benchmarks/bench_hang.py). Locals are never read (``--locals`` could copy secrets into
a report).

Each failure becomes a ``CaptureFailure`` whose ``kind`` says what to do: no right to trace, py-spy
missing, the process gone, not a Python process, no answer in time.
"""

from __future__ import annotations

import datetime as _dt
import json
import linecache
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tpudoctor.hang.model import CaptureFailure, Frame, StackSample, ThreadStack
from tpudoctor.redact import scrub_secrets

PYSPY_INSTALL = "pip install py-spy"
DEFAULT_TIMEOUT_S = 20.0
_DENIED = re.compile(r"Permission Denied|Permission denied \(os error 13\)|Operation not permitted|EPERM|"
                     r"os error 1\)|SYS_PTRACE", re.IGNORECASE)
_GONE = re.compile(r"No such process|No such file or directory \(os error 2\)|os error 3\)|"
                   r"Check that the process is running", re.IGNORECASE)
_NOT_PYTHON = re.compile(r"Failed to find python version|Failed to find a python interpreter", re.IGNORECASE)
_LOCK_WITH = re.compile(r"^\s*(?:async\s+)?with\b.*(?:lock|mutex|semaphore|cond)", re.IGNORECASE)
MAX_CONTEXT_LINES = 200


def pyspy_path() -> str | None:
    """py-spy on PATH, or next to this Python (a virtual environment's bin, which PATH may lack)."""
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def dump(pid: int, *, native: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S,
         pyspy: str | None = None) -> StackSample | CaptureFailure:
    """One py-spy dump of ``pid``, or why there is none."""
    pyspy = pyspy or pyspy_path()
    if pyspy is None:
        return CaptureFailure("pyspy_missing", "py-spy is not installed, so no stack can be taken",
                              f"install it where tpudoctor runs: {PYSPY_INSTALL}")
    argv = [pyspy, "dump", "--json", "--pid", str(pid)] + (["--native"] if native else [])
    taken_at = _dt.datetime.now(_dt.timezone.utc)
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
                              env={**os.environ, "RUST_BACKTRACE": "0"})
    except subprocess.TimeoutExpired:
        return CaptureFailure("timeout", f"py-spy did not answer within {timeout_s:g}s", "")
    except OSError as exc:
        return CaptureFailure("pyspy_missing", f"cannot run {pyspy}: {exc}", PYSPY_INSTALL)
    seconds = time.monotonic() - started
    err = done.stderr.decode(errors="replace").strip()
    if done.returncode != 0:
        return failure_from(pid, err or done.stdout.decode(errors="replace").strip())
    raw = done.stdout.decode(errors="replace")
    try:
        threads = parse_dump(raw, pid=pid)
    except ValueError as exc:
        return CaptureFailure("error", f"py-spy printed no readable dump: {exc}", err[-500:])
    return StackSample(taken_at=taken_at, seconds=seconds, native=native, threads=threads, raw=raw)


def failure_from(pid: int, message: str) -> CaptureFailure:
    """py-spy's error text as a failure kind (``Path('/proc/PID')`` tells a vanished process apart)."""
    detail = "\n".join(line for line in message.splitlines() if line.strip())[-800:]
    if not Path(f"/proc/{pid}").exists() or (_GONE.search(message) and not _DENIED.search(message)):
        return CaptureFailure("exited", f"process {pid} exited while its stacks were being taken", detail)
    if _DENIED.search(message):
        return CaptureFailure("ptrace_denied", f"no right to read process {pid}'s memory (ptrace)", detail)
    if _NOT_PYTHON.search(message):
        return CaptureFailure("not_python", f"process {pid} is not a Python process py-spy can read", detail)
    return CaptureFailure("error", f"py-spy failed on process {pid}", detail)


def parse_dump(text: str, *, pid: int | None = None) -> list[ThreadStack]:
    """py-spy's ``--json`` output: a list of threads, each with its frames (innermost first). With ``pid``,
    source files missing here are read through ``/proc/PID/root`` (tpudoctor in a sidecar container)."""
    data = json.loads(text)
    if not isinstance(data, list):
        raise ValueError("expected a list of threads")
    threads = []
    for item in data:
        frames = []
        for f in item.get("frames") or []:
            native = f.get("module") is not None  # py-spy names the library of a native frame only
            filename = str(f.get("filename") or "")
            line = int(f.get("line") or 0)
            code, holding = (None, ()) if native else source_context(in_process_root(filename, pid), line)
            frames.append(Frame(function=str(f.get("name") or "?"), file=filename, line=line, native=native,
                                code=code, holding=holding))
        threads.append(ThreadStack(tid=int(item.get("os_thread_id") or item.get("thread_id") or 0),
                                   name=str(item.get("thread_name") or ""), active=bool(item.get("active")),
                                   owns_gil=bool(item.get("owns_gil")), frames=frames))
    return threads


def in_process_root(path: str, pid: int | None) -> str:
    """``path`` as this process sees it, or through the traced process's root when only it has the file
    (another container sharing the process namespace)."""
    if pid is None or not path.startswith("/") or os.path.exists(path):
        return path
    return f"/proc/{pid}/root{path}"


def source_context(filename: str, line: int) -> tuple[str | None, tuple[str, ...]]:
    """The source line, and the ``with`` statements naming a lock that enclose it in its function: read
    here, where the process runs, so a report read elsewhere still has them."""
    if line <= 0 or not filename or filename.startswith("<"):
        return None, ()
    text = linecache.getline(filename, line)
    if not text:
        return None, ()
    code = scrub_secrets(text.strip())
    if any(marker in filename for marker in ("/site-packages/", "/dist-packages/", "/lib/python3", "/lib64/python3")):
        return code, ()  # a library's own locks are not the job's
    holding = []
    indent = _indent(text)
    for number in range(line - 1, max(0, line - MAX_CONTEXT_LINES), -1):
        above = linecache.getline(filename, number)
        if not above.strip() or above.lstrip().startswith("#"):
            continue
        level = _indent(above)
        if level >= indent:
            continue
        indent = level
        stripped = above.strip()
        if _LOCK_WITH.match(stripped):
            holding.append(f"{stripped} ({Path(filename).name}:{number})")
        if stripped.startswith(("def ", "async def ", "class ")) or level == 0:
            break
    return code, tuple(holding)


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))
