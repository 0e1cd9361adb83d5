"""Takes everything ``analyze`` needs from the live processes, twice, ``--interval`` apart; or reads it
back from a ``--dump-dir`` folder (``--replay``).

Per process, at the start and at the end of the interval: the kernel's counters, the last progress line
of each of its logs, and a py-spy dump (all processes at once, one py-spy each). Then, for the processes
that did not move, a ``--native`` dump where native frames tell more (``--native auto``): a healthy job is
never paused for the slow native unwinding. Megascale digests are read from every log in reach: the
processes' own, ``--log-file``, libtpu's (``TPU_LOG_DIR``) and Cloud Logging (``--since``, with a TPU name).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime as _dt
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tpudoctor.errors import InputError
from tpudoctor.hang import discover, procstat, stacks
from tpudoctor.hang.digest import HangDigest, find_digests, worker_of_host
from tpudoctor.hang.model import CaptureFailure, ProcessCapture, StackSample
from tpudoctor.hang.progress import read_steps, tail_lines
from tpudoctor.logs.clock import UTC, Zone

NATIVE_MODES = ("auto", "always", "never")
NATIVE_WHEN = ("device", "native", "collective", "unknown", "lock")
"""Categories where the C/C++ frames under the Python ones tell more (``--native auto``)."""
MAX_PARALLEL_DUMPS = 8
MAX_NATIVE_AUTO = 4
CAPTURE_FILE = "capture.json"


@dataclasses.dataclass
class CaptureOptions:
    pids: list[int] | None = None
    interval_s: float = 5.0
    native: str = "auto"
    dump_timeout_s: float = stacks.DEFAULT_TIMEOUT_S
    log_files: list[str] = dataclasses.field(default_factory=list)
    worker: str | None = None
    since_s: float = 3600.0
    dump_dir: str | None = None
    disabled_plugins: tuple[str, ...] = ()
    """Hang rule plugins to leave out (the run's ``disable_plugins`` setting)."""
    tz: Zone = UTC
    """The zone of log times that print none (``--tz``)."""


@dataclasses.dataclass
class Capture:
    captures: list[ProcessCapture]
    digests: list[HangDigest]
    started_at: _dt.datetime
    interval_s: float
    samples: int
    host: str
    worker: str | None
    environment: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"started_at": self.started_at.isoformat(), "interval_s": self.interval_s, "samples": self.samples,
                "host": self.host, "worker": self.worker, "environment": self.environment,
                "digests": [d.to_dict() for d in self.digests]}


def this_worker(flag: str | None) -> str | None:
    """--worker, then TPU_WORKER_ID (GKE), then a TPU VM host name (``t1v-n-...-w-3``)."""
    if flag not in (None, ""):
        return str(flag)
    if os.environ.get("TPU_WORKER_ID", "").strip().isdigit():  # libtpu may have set it to its own warning text
        return os.environ["TPU_WORKER_ID"].strip()
    return worker_of_host(socket.gethostname())


def capture_live(options: CaptureOptions, *, on_progress: Callable[[str], None] | None = None) -> Capture:
    from tpudoctor.families import load_rules
    from tpudoctor.hang.classify import process_state

    say = on_progress or (lambda _m: None)
    started_at = _dt.datetime.now(_dt.timezone.utc)
    host, worker = socket.gethostname(), this_worker(options.worker)
    for path in options.log_files:
        if not os.path.isfile(path):
            raise InputError(f"--log-file {path}: no such file", hint="give the path of your job's log file")
    say("finding the training processes")
    found = discover.find_processes(options.pids)
    captures = [ProcessCapture(pid=c.pid, cmdline=c.cmdline, host=host, worker=worker,
                               selected_because=c.selected_because, frameworks=c.frameworks, devices=c.devices,
                               log_files=list(dict.fromkeys(c.log_files + options.log_files))) for c in found]
    pyspy = stacks.pyspy_path()
    say(f"first sample of {len(captures)} process(es)")
    first_at = time.monotonic()
    _sample_all(captures, pyspy, options)
    remaining = options.interval_s - (time.monotonic() - first_at)
    if remaining > 0 and captures:
        say(f"waiting {options.interval_s:g}s for the second sample")
        time.sleep(remaining)
    say("second sample")
    _sample_all(captures, pyspy, options)
    if options.native != "never" and pyspy:
        rules = list(load_rules("hang-rules", disabled=options.disabled_plugins).values())
        wanted = [c for c in captures if c.samples and c.failure is None]
        if options.native == "auto":
            wanted = _one_per_place([(c, process_state(c, rules)) for c in wanted])
        if wanted:
            say(f"native frames of {len(wanted)} process(es) that did not move")
            _parallel(wanted, lambda c: _native(c, pyspy, options))
    log_sources = _log_sources(captures, options)
    digests = [d for source in log_sources for d in _digests_in(source, options.tz)]
    environment = {"ptrace_scope": _ptrace_scope(), "platform": "gke" if os.environ.get("KUBERNETES_SERVICE_HOST")
                   else "vm", "log_sources": log_sources, "pyspy": pyspy, "native": options.native}
    if any(c.devices or "libtpu" in c.frameworks for c in captures):  # only where a TPU is in use
        say("the TPU runtime's view (tpu-info)")
        environment["tpu_info"] = tpu_runtime_view()
    result = Capture(captures=captures, digests=digests, started_at=started_at, interval_s=options.interval_s,
                     samples=max((len(c.samples) for c in captures), default=0), host=host, worker=worker,
                     environment=environment)
    if options.dump_dir:
        write_dump_dir(result, options.dump_dir)
    return result


def _one_per_place(pairs) -> list[ProcessCapture]:
    """For ``--native auto``: one process of each place where processes stand still and native frames tell
    more (processes at the same Python frames have the same native ones), at most ``MAX_NATIVE_AUTO``."""
    chosen: dict[tuple[str, str], ProcessCapture] = {}
    for capture, state in pairs:
        if state.progress != "moving" and state.category in NATIVE_WHEN:
            chosen.setdefault((state.category, state.signature), capture)
    return list(chosen.values())[:MAX_NATIVE_AUTO]


def _parallel(captures: list[ProcessCapture], work: Callable[[ProcessCapture], None]) -> None:
    if not captures:
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_DUMPS, len(captures))) as pool:
        list(pool.map(work, captures))


def _sample_all(captures: list[ProcessCapture], pyspy: str | None, options: CaptureOptions) -> None:
    _parallel(captures, lambda c: _sample(c, pyspy, options))


def _sample(capture: ProcessCapture, pyspy: str | None, options: CaptureOptions) -> None:
    """One sample. The kernel's counters are read after the first dump and before the second: py-spy
    stops every thread while it reads, which the counters would count as the thread running."""
    first = not capture.samples and not capture.steps
    if not first:
        _count(capture)
    capture.steps += [_reading(path, capture.pid, options.tz) for path in capture.log_files]
    if capture.failure is not None and capture.failure.kind != "timeout":
        if first:
            _count(capture)
        return  # the same failure again: no right, no py-spy, gone
    state = procstat.read_counters(capture.pid)
    if state is None or state.state in ("Z", "X"):
        capture.failure = CaptureFailure("exited", f"process {capture.pid} exited while its stacks were being taken")
        return
    if pyspy is None:
        capture.failure = stacks.dump(capture.pid, pyspy=None)  # the install line
    else:
        result = stacks.dump(capture.pid, timeout_s=options.dump_timeout_s, pyspy=pyspy)
        if isinstance(result, StackSample):
            capture.samples.append(result)
        else:
            capture.failure = result
    if first:
        _count(capture, settle=True)


def _reading(path: str, pid: int, tz: Zone = UTC):
    reading = read_steps(stacks.in_process_root(path, pid), tz=tz)
    reading.source = path  # the name the job knows it by
    return reading


SETTLE_READS = 10
SETTLE_PAUSE_S = 0.02


def _count(capture: ProcessCapture, *, settle: bool = False) -> None:
    """The kernel's counters now; ``settle``: right after a dump, once the threads py-spy stopped have gone back
    to where they wait (on a loaded host that takes a scheduling round or two, which would count as running)."""
    counters = procstat.read_counters(capture.pid)
    for _ in range(SETTLE_READS if settle and counters is not None else 0):
        time.sleep(SETTLE_PAUSE_S)
        again = procstat.read_counters(capture.pid)
        if again is None or again.switches == counters.switches:
            break
        counters = again
    if counters is not None:
        capture.counters.append(counters)


def _native(capture: ProcessCapture, pyspy: str, options: CaptureOptions) -> None:
    result = stacks.dump(capture.pid, native=True, timeout_s=options.dump_timeout_s, pyspy=pyspy)
    if isinstance(result, StackSample):
        capture.native = result
    elif result.kind == "exited":
        capture.failure = result


def _log_sources(captures: list[ProcessCapture], options: CaptureOptions) -> list[str]:
    from tpudoctor.providers.libtpu_logs import libtpu_log_dirs, recent_log_files

    sources = [stacks.in_process_root(path, c.pid) for c in captures for path in c.log_files]
    sources += list(options.log_files)
    sources += [str(p) for p in recent_log_files(libtpu_log_dirs(), options.since_s)]
    return list(dict.fromkeys(sources))


def _digests_in(path: str, tz: Zone = UTC) -> list[HangDigest]:
    try:
        return find_digests(tail_lines(path), path, tz=tz)
    except OSError:
        return []


def _ptrace_scope() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip())
    except (OSError, ValueError):
        return None


# -- --dump-dir and --replay ------------------------------------------------------------------------
def write_dump_dir(capture: Capture, folder: str) -> None:
    """``capture.json`` (the run), ``pid-N.json`` (each process as captured) and ``pid-N-sample-K.pyspy.json``
    (what py-spy printed, untouched)."""
    root = Path(folder)
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / CAPTURE_FILE).write_text(json.dumps(capture.to_dict(), indent=1))
        for c in capture.captures:
            (root / f"pid-{c.pid}.json").write_text(json.dumps(c.to_dict(), indent=1))
            for k, sample in enumerate([*c.samples, *([c.native] if c.native else [])], start=1):
                if sample.raw is not None:
                    kind = "native" if sample.native else f"sample-{k}"
                    (root / f"pid-{c.pid}-{kind}.pyspy.json").write_text(sample.raw)
    except OSError as exc:
        raise InputError(f"--dump-dir {folder}: cannot write: {exc.strerror or exc}") from None


def read_dump_dir(folder: str) -> Capture:
    """A capture written by ``--dump-dir``, to analyse again (``--replay``)."""
    root = Path(folder)
    meta_path = root / CAPTURE_FILE
    if not meta_path.is_file():
        raise InputError(f"--replay {folder}: no {CAPTURE_FILE} in it",
                         hint="give a folder written by tpudoctor hang --dump-dir")
    try:
        meta = json.loads(meta_path.read_text())
        captures = [ProcessCapture.from_dict(json.loads(p.read_text()))
                    for p in sorted(root.glob("pid-*.json")) if not p.name.endswith(".pyspy.json")]
        return Capture(captures=captures, digests=[HangDigest.from_dict(d) for d in meta.get("digests") or []],
                       started_at=_dt.datetime.fromisoformat(meta["started_at"]),
                       interval_s=float(meta.get("interval_s") or 0.0), samples=int(meta.get("samples") or 0),
                       host=str(meta.get("host") or ""), worker=meta.get("worker"),
                       environment=dict(meta.get("environment") or {}))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"--replay {folder}: not a readable capture: {type(exc).__name__}: {exc}") from None


def cloud_digests(project: str, zone: str | None, tpu: str, *, since_s: float, session,
                  worker: str | None = None) -> tuple[list[HangDigest], str]:
    """Megascale digests in the node's Cloud Logging entries (severity WARNING and up, ``--since`` back), read
    through the run's Google Cloud ``session``; and what was read, or why nothing was."""
    from tpudoctor.gcp.errors import ApiCallFailed
    from tpudoctor.providers.cloud_logging import MAX_ENTRIES, PAGE_SIZE, build_filter, entry_text
    from tpudoctor.providers.read_access import no_credentials

    identity = {"project": project, "zone": zone, "node_id": tpu, "worker_id": worker}
    query = build_filter(identity, since_s, _dt.datetime.now(_dt.timezone.utc))
    try:
        api = session.logging
    except ApiCallFailed as exc:
        return [], f"Cloud Logging not read: {no_credentials(exc.failure)}"
    try:
        entries = api.entries(project, query, page_size=PAGE_SIZE, max_entries=MAX_ENTRIES)
    except ApiCallFailed as exc:
        return [], f"Cloud Logging not read: {exc.failure.message}"
    found = []
    for entry in entries:
        labels = (entry.resource.labels or {}) if entry.resource else {}
        source = f"cloud-logging:{tpu}/worker-{labels.get('worker_id', '?')}"
        for digest in find_digests(entry_text(entry.payload).splitlines(), source):
            digest.logged_at = digest.logged_at or entry.timestamp
            found.append(digest)
    return found, f"Cloud Logging: {len(entries)} entries of {tpu} in the last {since_s:g}s"


TPU_INFO_TIMEOUT_S = 20.0


def tpu_runtime_view(timeout_s: float = TPU_INFO_TIMEOUT_S) -> dict[str, Any]:
    """The TPU runtime's own view where ``tpu-info`` (libtpu's metrics) is installed: each core's duty cycle
    while the job stands still. A chip busy at 100% runs a program that does not end; chips at 0% wait."""
    import re
    import shutil
    import subprocess

    tool = shutil.which("tpu-info")
    if tool is None:
        return {"available": False, "why": "tpu-info is not installed (pip install tpu-info; TPU VMs only)"}
    argv = [tool, "--metric", "duty_cycle_percent", "--metric", "hbm_usage"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except (subprocess.TimeoutExpired, OSError) as exc:
        return {"available": False, "why": f"tpu-info did not answer: {exc}"}
    text = done.stdout
    duty: dict[str, float] = {}
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and stripped[0] not in "|│┃┏┡└┗━─":
            section = stripped
        cells = [c.strip() for c in re.split(r"[|│┃]", stripped) if c.strip()]
        if "duty" in section.lower() and len(cells) >= 2 and re.fullmatch(r"\d+", cells[0]):
            match = re.fullmatch(r"([0-9.]+)\s*%", cells[-1])
            if match:
                duty[cells[0]] = float(match.group(1))
    return {"available": True, "exit_code": done.returncode, "duty_cycle_percent": duty, "text": text[-3000:],
            "stderr": done.stderr[-500:]}
