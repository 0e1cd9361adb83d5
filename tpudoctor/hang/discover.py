"""Which processes on this VM are the training job.

In order: the processes named by ``--pid``; else those holding a TPU device file (``/dev/accel*``,
``/dev/vfio/*``) or the libtpu lock file (``tpudoctor.providers.devices.scan_holders``); else the Python
processes that loaded JAX, torch_xla or TensorFlow (their shared libraries in ``/proc/PID/maps``).
Forked helpers (a child with its parent's command line, such as a data loader worker) and tpudoctor's
own process and ancestors are left out.

``TPUDOCTOR_PROC_ROOT`` and ``TPUDOCTOR_DEV_ROOT`` move /proc and /dev for the device scan, as for
``check``; reading a process's own files (maps, open files) always uses the real /proc.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from tpudoctor.errors import InputError

FRAMEWORK_LIBRARIES = {
    "jax": re.compile(r"/(?:libjax_common\.so|xla_extension\.so|jaxlib/[^/]*\.so)"),
    "torch_xla": re.compile(r"/(?:_XLAC[^/]*\.so|torch_xla/lib/)"),
    "tensorflow": re.compile(r"/(?:libtensorflow_framework\.so|_pywrap_tensorflow_internal\.so)"),
    "libtpu": re.compile(r"/libtpu\.so"),
}
LOG_NAME = re.compile(r"(?:\.(?:log|txt|out|err)(?:\.\d+)?$|log)", re.IGNORECASE)
SKIP_PATHS = ("/proc/", "/sys/", "/dev/", "/site-packages/", "/dist-packages/")
O_ACCMODE = 0o3


@dataclasses.dataclass
class Candidate:
    pid: int
    cmdline: str
    selected_because: str
    frameworks: list[str]
    devices: list[str]
    log_files: list[str]


def proc_root() -> Path:
    return Path(os.environ.get("TPUDOCTOR_PROC_ROOT", "/proc"))


def find_processes(pids: list[int] | None = None) -> list[Candidate]:
    """The job's processes; ``pids`` (``--pid``) must exist, else an input error (exit 2)."""
    if pids:
        missing = [p for p in pids if not Path(f"/proc/{p}").is_dir()]
        if missing:
            raise InputError(f"--pid {', '.join(map(str, missing))}: no such process",
                             hint="list the job's processes with: ps -ef | grep python")
        return [_candidate(pid, "named by --pid", devices=_devices_of(pid)) for pid in dict.fromkeys(pids)]
    own = _own_lineage()
    holders = _device_holders()
    if holders:
        return [_candidate(h["pid"], "holds " + ", ".join(h["files"]), devices=[f for f in h["files"] if f.startswith("/dev")])
                for h in holders if h["pid"] not in own and Path(f"/proc/{h['pid']}").is_dir()]
    found = []
    for pid in _all_pids():
        if pid in own:
            continue
        frameworks = loaded_frameworks(pid)
        if frameworks and _is_python(pid) and not _is_forked_helper(pid):
            found.append(_candidate(pid, f"Python with {', '.join(frameworks)} loaded", frameworks=frameworks))
    return found


def _candidate(pid: int, why: str, *, devices: list[str] | None = None,
               frameworks: list[str] | None = None) -> Candidate:
    return Candidate(pid=pid, cmdline=cmdline_of(pid), selected_because=why,
                     frameworks=frameworks if frameworks is not None else loaded_frameworks(pid),
                     devices=devices or [], log_files=open_log_files(pid))


def _device_holders() -> list[dict]:
    from tpudoctor.providers.devices import scan_holders

    dev_root = Path(os.environ.get("TPUDOCTOR_DEV_ROOT", "/dev"))
    lockfile = Path(os.environ.get("TPUDOCTOR_LIBTPU_LOCKFILE", "/tmp/libtpu_lockfile"))
    holders, _unreadable = scan_holders(proc_root(), dev_root, lockfile)
    return holders


def _devices_of(pid: int) -> list[str]:
    found = []
    for target in _fd_targets(pid).values():
        if target.startswith("/dev/accel") or target.startswith("/dev/vfio/"):
            found.append(target)
    return sorted(set(found))


def _all_pids() -> list[int]:
    try:
        return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    except OSError:
        return []


def _own_lineage() -> set[int]:
    """This process and its ancestors (tpudoctor may run inside a Python process that loaded JAX)."""
    seen, pid = set(), os.getpid()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        pid = _parent(pid) or 0
    return seen


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def cmdline_of(pid: int) -> str:
    """The command line, with any access token or key in it scrubbed (it goes into reports)."""
    from tpudoctor.redact import scrub_secrets

    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        raw = b""
    text = " ".join(p.decode(errors="replace") for p in raw.split(b"\0") if p)
    if text:
        return scrub_secrets(text)
    try:
        return f"[{Path(f'/proc/{pid}/comm').read_text().strip()}]"
    except OSError:
        return "?"


def loaded_frameworks(pid: int) -> list[str]:
    try:
        maps = Path(f"/proc/{pid}/maps").read_text(errors="replace")
    except OSError:
        return []
    return [name for name, pattern in FRAMEWORK_LIBRARIES.items() if pattern.search(maps)]


def _is_python(pid: int) -> bool:
    try:
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        exe = cmdline_of(pid).split(" ", 1)[0].rsplit("/", 1)[-1]
    return exe.startswith("python")


def _is_forked_helper(pid: int) -> bool:
    parent = _parent(pid)
    return bool(parent and parent > 1 and cmdline_of(parent) == cmdline_of(pid))


def _fd_targets(pid: int) -> dict[int, str]:
    targets = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return {}
    for fd in fds:
        try:
            targets[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except (OSError, ValueError):
            continue
    return targets


def open_log_files(pid: int) -> list[str]:
    """Regular files the process has open for writing that look like logs (its redirected stdout and
    stderr, ``*.log``): where its step lines go."""
    found = []
    for fd, target in sorted(_fd_targets(pid).items()):
        if not target.startswith("/") or target.startswith(SKIP_PATHS) or target.endswith(" (deleted)"):
            continue
        if fd not in (1, 2) and not LOG_NAME.search(os.path.basename(target)):
            continue
        if not _opened_for_writing(pid, fd) or not os.path.isfile(target):
            continue
        found.append(target)
    return list(dict.fromkeys(found))


def _opened_for_writing(pid: int, fd: int) -> bool:
    try:
        for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
            if line.startswith("flags:"):
                return int(line.split()[1], 8) & O_ACCMODE != os.O_RDONLY
    except (OSError, ValueError, IndexError):
        return False
    return False
