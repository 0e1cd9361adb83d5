"""Stack dumps users already have, read from text: ``py-spy dump`` (with or without ``--native`` and
``--locals``), Python's ``faulthandler`` (``dump_traceback_later``, a SIGABRT/SIGSEGV, a watchdog) and
``traceback``-style stacks (pytest-timeout, ``Traceback (most recent call last):``).

Pure: text in, ``ProcessCapture`` objects out (one ``StackSample`` per dump). Frames are kept innermost
first, as py-spy prints them; faulthandler also prints most recent call first, tracebacks print it last and
are reversed. A prefix that a launcher or a log collector puts before every line (``sglang-1  | ``,
``[trainer1|1]:``, ``[rank0]:``) is read off the first line of a dump and stripped from the lines after it.
Lines between dumps (log lines) are skipped; a line that starts like a frame but is not one, or a file with
no stack at all, is an ``InputError`` naming the file and the line.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import itertools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from tpudoctor.errors import InputError
from tpudoctor.hang.model import Frame, ProcessCapture, StackSample, ThreadStack

MAX_FILE_BYTES = 50 * 1024 * 1024

# py-spy: ``Process 4242: python train.py`` / ``Python v3.10.12 (/usr/bin/python3)``
_PROCESS = re.compile(r"^(?P<p>.*?)Process (?P<pid>\d+): (?P<cmd>.*)$")
_PY_VERSION = re.compile(r"^(?P<p>.*?)Python v\d+\.\d+(?:\.\d+)?\S* \(.*\)\s*$")
# py-spy: ``Thread 4242 (idle): "MainThread"``, ``Thread 0x7ED3637AE700 (active+gil): "Worker"``, ``Thread 8 (idle)``
_PYSPY_THREAD = re.compile(r"^(?P<p>.*?)Thread (?P<tid>0x[0-9A-Fa-f]+|\d+) \((?P<state>idle|active)(?P<gil>\+gil)?\)"
                           r"(?:: \"(?P<name>.*)\")?\s*$")
# py-spy frame: ``    wait (threading.py:320)``; native: ``    pthread_cond_wait (libc.so.6)``, ``    0x7f.. (libc.so.6)``
_PYSPY_FRAME = re.compile(r"^ {4}(?P<func>\S.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)\s*$")
_PYSPY_LOCALS = re.compile(r"^ {8,}\S")  # ``--locals``: ``        Arguments:`` / ``            x: 1``
# faulthandler: ``Thread 0x00007f.. (most recent call first):``, ``Current thread 0x.. (most recent call first):``
_FAULT_THREAD = re.compile(r"^(?P<p>.*?)(?P<current>Current thread|Thread) (?P<tid>0x[0-9a-fA-F]+) "
                           r"\(most recent call first\):\s*$")
_FAULT_STACK = re.compile(r"^(?P<p>.*?)Stack \(most recent call first\):\s*$")
_FAULT_FRAME = re.compile(r"^(?P<p>.*?)\s*File \"(?P<file>.+)\", line (?P<line>\d+) in (?P<func>.+?)\s*$")
# traceback module (most recent call LAST): ``  File "x.py", line 3, in f`` then the source line
_TB_HEADER = re.compile(r"^(?P<p>.*?)(?:Traceback \(most recent call last\):|~+ Stack of (?P<name>.+?) "
                        r"\((?P<tid>\d+)\) ~+)\s*$")
_TB_FRAME = re.compile(r"^(?P<p>.*?)\s*File \"(?P<file>.+)\", line (?P<line>\d+), in (?P<func>.+?)\s*$")
UNREAD_FILE = "<frame not read: quoted as printed, line of the dump>"
MAX_QUOTED_FRAME = 160
_FRAME_LIKE = re.compile(r"^\s*File \"|^ {4}\S.*\(.*:\d*\S*$")
_BOOTSTRAP = ("_bootstrap", "_bootstrap_inner")


@dataclasses.dataclass
class _Thread:
    tid: int
    name: str
    active: bool
    owns_gil: bool
    frames: list[Frame]
    newest_last: bool = False


@dataclasses.dataclass
class _Process:
    pid: int | None
    cmdline: str
    threads: list[_Thread]
    kind: str
    """``py-spy``, ``faulthandler`` or ``traceback``."""


def parse_stack_text(text: str, *, source: str = "<text>") -> list[_Process]:
    """Every process dump in ``text`` (py-spy prints several one after another)."""
    processes: list[_Process] = []
    process: _Process | None = None
    thread: _Thread | None = None
    prefix = ""
    first_stack_line = 0

    def new_process(pid: int | None, cmdline: str, kind: str) -> _Process:
        made = _Process(pid=pid, cmdline=cmdline, threads=[], kind=kind)
        processes.append(made)
        return made

    def current_process(kind: str) -> _Process:
        nonlocal process
        if process is None or (process.kind != kind and process.threads):
            process = new_process(None, "", kind)
        process.kind = process.kind or kind
        return process

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        body = line[len(prefix):] if prefix and line.startswith(prefix) else line
        if not body.strip() or body.strip() == prefix.strip():
            continue
        if m := _PROCESS.match(line):
            prefix = m["p"]
            process = new_process(int(m["pid"]), m["cmd"].strip(), "py-spy")
            thread = None
            first_stack_line = first_stack_line or number
            continue
        if _PY_VERSION.match(line):
            continue
        if m := _PYSPY_THREAD.match(line):
            prefix = m["p"]
            thread = _Thread(tid=_tid(m["tid"]), name=m["name"] or "", active=m["state"] == "active",
                             owns_gil=bool(m["gil"]), frames=[])
            current_process("py-spy").threads.append(thread)
            first_stack_line = first_stack_line or number
            continue
        if m := _FAULT_THREAD.match(line) or _FAULT_STACK.match(line):
            prefix = m["p"]
            current = "current" in m.groupdict() and m["current"] == "Current thread"
            tid = _tid(m["tid"]) if "tid" in m.groupdict() and m["tid"] else 0
            thread = _Thread(tid=tid, name="", active=False, owns_gil=current, frames=[])
            current_process("faulthandler").threads.append(thread)
            first_stack_line = first_stack_line or number
            continue
        if m := _TB_HEADER.match(line):
            prefix = m["p"]
            thread = _Thread(tid=int(m["tid"]) if m["tid"] else 0, name=m["name"] or "", active=False,
                             owns_gil=False, frames=[], newest_last=True)
            current_process("traceback").threads.append(thread)
            first_stack_line = first_stack_line or number
            continue
        if m := _TB_FRAME.match(line):
            if thread is None or not thread.newest_last:
                prefix = m["p"]
                thread = _Thread(tid=0, name="", active=False, owns_gil=False, frames=[], newest_last=True)
                current_process("traceback").threads.append(thread)
                first_stack_line = first_stack_line or number
            thread.frames.append(Frame(function=m["func"], file=m["file"], line=int(m["line"])))
            continue
        if m := _FAULT_FRAME.match(line):
            if thread is None or thread.newest_last or process is None or process.kind != "faulthandler":
                # frames pasted without their ``Thread 0x...`` header: one thread of its own
                prefix = m["p"]
                thread = _Thread(tid=0, name="", active=False, owns_gil=False, frames=[])
                current_process("faulthandler").threads.append(thread)
                first_stack_line = first_stack_line or number
            thread.frames.append(Frame(function=m["func"], file=m["file"], line=int(m["line"])))
            continue
        if thread is not None and process is not None and process.kind == "py-spy":
            if m := _PYSPY_FRAME.match(body):
                thread.frames.append(_pyspy_frame(m))
                continue
            if _PYSPY_LOCALS.match(body):
                continue
        if thread is not None and thread.newest_last and body.startswith("    ") and thread.frames:
            last = thread.frames[-1]  # the source line under a traceback frame
            if last.code is None:
                thread.frames[-1] = dataclasses.replace(last, code=body.strip())
                continue
        if thread is not None and _FRAME_LIKE.match(body):
            # A frame in a form no pattern reads (a path with parentheses, say): kept where it stands, quoted as
            # printed, so the rest of the dump is judged and the reader sees what was not understood.
            thread.frames.append(Frame(function=body.strip()[:MAX_QUOTED_FRAME], file=UNREAD_FILE,
                                       line=number))
            continue
        thread = None  # any other line (a log line between dumps) ends the thread it follows
    if not any(p.threads for p in processes):
        where = _first_text_line(text)
        raise InputError(f"{source}:{where}: no stack dump found: expected `py-spy dump` output "
                         "('Thread N (idle|active): \"Name\"' then '    function (file.py:LINE)') or a faulthandler "
                         "dump ('Thread 0x... (most recent call first):' then '  File \"...\", line N in function')")
    for p in processes:
        for t in p.threads:
            if t.newest_last:
                t.frames.reverse()
                t.newest_last = False
        if p.kind == "faulthandler" and p.threads and not any(t.name for t in p.threads):
            _name_faulthandler_main(p.threads)
    return [p for p in processes if p.threads]


def _tid(text: str) -> int:
    return int(text, 16) if text.lower().startswith("0x") else int(text)


def _pyspy_frame(m: re.Match) -> Frame:
    file = m["file"]
    python = file.endswith((".py", ".pyx")) or file.startswith("<") or (m["line"] is not None and ".py" in file)
    return Frame(function=m["func"], file=file, line=int(m["line"] or 0), native=not python)


def _name_faulthandler_main(threads: list[_Thread]) -> None:
    """faulthandler lists the newest thread first and the main thread last (CPython keeps thread states
    newest first); the last thread that was not started by ``threading`` is taken as the main thread."""
    for t in reversed(threads):
        if t.frames and t.frames[-1].function not in _BOOTSTRAP:
            t.name = "MainThread"
            return


def _first_text_line(text: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            return number
    return 1


# -- files -> captures ---------------------------------------------------------------------------------
_SUFFIXES = (".txt", ".log", ".dump", ".pyspy", ".faulthandler", ".stacks", ".stack", ".out")


def worker_name(path: Path) -> str:
    """``rank_a`` for ``rank_a.pyspy.txt``: what the report calls the process of a file."""
    name = path.name
    while True:
        stem = next((name[: -len(s)] for s in _SUFFIXES if name.lower().endswith(s) and len(name) > len(s)), None)
        if stem is None:
            return name
        name = stem


def expand_paths(paths: Iterable[str]) -> list[Path]:
    """Files as given; a folder gives its files (sorted, hidden files and ``manifest.toml``-like notes left out)."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                            and p.suffix.lower() not in (".toml", ".md", ".json", ".sha256"))
            if not inside:
                raise InputError(f"{given}: the folder holds no stack dump files")
            files.extend(inside)
        elif path.is_file():
            files.append(path)
        elif path.exists():  # a FIFO, <(py-spy dump ...), /dev/stdin, /dev/null: read what it holds
            files.append(path)
        else:
            raise InputError(f"{given}: no such file or folder")
    return files


def read_text(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise InputError(f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB: not a stack dump")
        with path.open("rb") as handle:  # bounded: a device or a pipe has no size to check first
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB: not a stack dump")
    if not data.strip():
        kind = "" if path.is_file() else " (not a regular file)"
        raise InputError(f"{path}: is empty{kind}: there is no stack dump in it",
                         hint="give the file py-spy dump or faulthandler wrote, e.g. py-spy dump --pid PID > dump.txt")
    return data.decode("utf-8", errors="replace")


SAME_DUMP_WITHIN_S = 1.0
"""Two files with the same bytes written less than this apart are one dump (a copy): py-spy prints no time, so
two real dumps of a process that did not move hold the same bytes too, and only the files' times tell them apart."""


@dataclasses.dataclass
class StackDumps:
    captures: list[ProcessCapture]
    repeated: list[str]
    """A file given again (the same path, or a copy of an earlier file), read once: why, per file."""
    interval_s: float | None
    """The shortest time between two dumps of a process, by the files' modification times; None when no
    process has two dumps, or their files were written within ``SAME_DUMP_WITHIN_S`` (the dumps carry no time)."""


def read_stack_files(groups: Sequence[Sequence[str]]) -> list[ProcessCapture]:
    return read_stack_dumps(groups).captures


def read_stack_dumps(groups: Sequence[Sequence[str]]) -> StackDumps:
    """``groups``: the files of each ``--stacks`` (given once or more). Within a group, two dumps naming the
    same pid are two samples of one process; across groups, the same worker name (file name) is. Otherwise
    each file (each py-spy ``Process`` in it) is one process, named after its file. A file met again (the same
    file by its real path, or the same bytes written within a second of an earlier file) is one snapshot: it
    is read once, and ``repeated`` says so."""
    captures: dict[tuple[str, int], ProcessCapture] = {}
    repeated: list[str] = []
    read: dict[tuple[int, int], Path] = {}  # (device, inode) -> the path it was read under
    by_bytes: dict[bytes, tuple[Path, float]] = {}
    for group in groups:
        seen_in_group: dict[int, tuple[str, int]] = {}
        for path in expand_paths(group):
            status = path.stat()
            same_file = read.get((status.st_dev, status.st_ino))
            if same_file is not None:  # checked before reading: a FIFO given twice has nothing more to read
                repeated.append(f"{path} is {same_file} again" if str(path) != str(same_file)
                                else f"{path} was given twice")
                continue
            text = read_text(path)
            earlier = by_bytes.get(text.encode())
            if earlier is not None and abs(status.st_mtime - earlier[1]) < SAME_DUMP_WITHIN_S:
                repeated.append(f"{path} holds the same bytes as {earlier[0]}, written within a second of it "
                                "(a copy)")
                continue
            read[(status.st_dev, status.st_ino)] = path
            by_bytes.setdefault(text.encode(), (path, status.st_mtime))
            processes = parse_stack_text(text, source=str(path))
            taken = _dt.datetime.fromtimestamp(status.st_mtime, _dt.timezone.utc)
            base = worker_name(path)
            for index, dump in enumerate(processes):
                pid = dump.pid or 0
                worker = base if len(processes) == 1 else f"{base}/{pid or index + 1}"
                key = seen_in_group.get(pid) if pid else None
                key = key or (worker, pid)
                sample = StackSample(taken_at=taken, seconds=0.0, native=_has_native(dump),
                                     threads=[ThreadStack(tid=t.tid, name=t.name, active=t.active, owns_gil=t.owns_gil,
                                                          frames=t.frames) for t in dump.threads], raw=text)
                capture = captures.get(key)
                if capture is None:
                    capture = ProcessCapture(pid=pid, cmdline=dump.cmdline, host="", worker=worker,
                                             selected_because=f"{dump.kind} dump {path}",
                                             frameworks=_frameworks(dump))
                    captures[key] = capture
                capture.samples.append(sample)
                if pid:
                    seen_in_group[pid] = key
    return StackDumps(list(captures.values()), repeated, _interval_s(captures.values()))


def _interval_s(captures: Iterable[ProcessCapture]) -> float | None:
    gaps = [abs((b.taken_at - a.taken_at).total_seconds()) for c in captures
            for a, b in itertools.pairwise(c.samples)]
    shortest = min(gaps, default=None)
    return shortest if shortest is not None and shortest >= SAME_DUMP_WITHIN_S else None


def _has_native(dump: _Process) -> bool:
    return any(f.native for t in dump.threads for f in t.frames)


_FRAMEWORK_MARKERS = {"jax": ("jax/", "jaxlib/"), "torch_xla": ("torch_xla/",), "torch": ("torch/",),
                      "tensorflow": ("tensorflow/",), "libtpu": ("libtpu",)}


def _frameworks(dump: _Process) -> list[str]:
    files = [f.file for t in dump.threads for f in t.frames]
    return [name for name, markers in _FRAMEWORK_MARKERS.items() if any(m in f for f in files for m in markers)]
