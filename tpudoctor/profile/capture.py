"""Load every host of a capture (in parallel processes when there are several) into a ProfileCapture."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from tpudoctor import locations
from tpudoctor.captures.capture_files import HostFile, resolve
from tpudoctor.captures.xspace.columns import DEVICE_PLANE_PREFIXES, LoadOptions
from tpudoctor.captures.xspace.host_profile import HostProfile
from tpudoctor.captures.xspace.reader import decode_host, decode_host_file
from tpudoctor.errors import InputError
from tpudoctor.profile.executor import HostTask, executor_for


@dataclasses.dataclass
class ProfileCapture:
    """A loaded capture: ``hosts`` (hostname -> HostProfile) and ``failed_hosts`` (hostname -> why).

    All hosts' ``events.start_ps`` share one origin, ``time_origin_ns``. ``notes`` are facts a
    reader should know (e.g. a capture without device planes); they are not errors.
    """

    source: str
    run: str | None
    hosts: dict[str, HostProfile]
    failed_hosts: dict[str, str]
    time_origin_ns: int = 0
    runs_available: tuple[str, ...] = ()
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def has_device_planes(self) -> bool:
        return any(host.planes["is_device"].any() for host in self.hosts.values())


def load(path: str | os.PathLike[str], *, run: str | None = None, max_workers: int | None = None,
         options: LoadOptions | None = None) -> ProfileCapture:
    """Load a capture from a ``.xplane.pb`` file, a run directory or a logdir (local or ``gs://``).

    ``run`` picks a run of a logdir (default: the newest). ``options`` (``LoadOptions``) says which
    stats become event columns: every stat of ``EVENT_STAT_COLUMNS`` by default,
    ``LoadOptions(extra_stats={"name": "int"})`` adds some. Raises ``InputError`` when nothing
    loads; a bad file among several hosts goes to ``failed_hosts``.
    """
    options = options or LoadOptions()
    resolved = resolve(path, run)
    hosts: dict[str, HostProfile] = {}
    failed: dict[str, str] = {}
    if len(resolved.hosts) == 1:
        only = resolved.hosts[0]
        hosts[only.hostname] = load_host(only, options)
    else:
        executor = executor_for(resolved.hosts, max_workers=max_workers)
        for host_file, result in executor.map(LOAD_HOST, resolved.hosts, options):
            if isinstance(result, HostProfile):
                hosts[host_file.hostname] = result
            else:
                failed[host_file.hostname] = result
        if not hosts:
            details = "; ".join(f"{name}: {message}" for name, message in failed.items())
            raise InputError(f"no host of {resolved.source} could be loaded: {details}")
    origin_ns = min(host.time_origin_ns for host in hosts.values())
    for host in hosts.values():
        host.rebase(origin_ns)
    capture = ProfileCapture(source=resolved.source, run=resolved.run, hosts=hosts, failed_hosts=failed,
                             time_origin_ns=origin_ns, runs_available=resolved.runs_available)
    capture.notes.extend(_notes(capture))
    return capture


def load_host(host_file: HostFile, options: LoadOptions) -> HostProfile:
    """One host file, read and decoded (``InputError`` when it cannot be). A large local file is
    read plane by plane (``xspace.decode_host_file``)."""
    if not host_file.location.startswith("gs://"):
        from tpudoctor.profile.memory import ensure_memory_for

        try:
            ensure_memory_for(os.path.getsize(host_file.location), host_file.location)
            return decode_host_file(host_file.location, hostname=host_file.hostname, source=host_file.location,
                                    options=options)
        except OSError as exc:
            raise InputError(f"cannot read {host_file.location}: {exc.strerror or exc}") from exc
    # the bytes are passed, not kept here: the decoder drops them once they are parsed
    return decode_host(read_bytes(host_file.location), hostname=host_file.hostname, source=host_file.location,
                       options=options)


LOAD_HOST = HostTask(load_host, key="load-host", noun="loader", verb="decoded",
                     preload=("tpudoctor.captures.xspace.reader",))
"""Loading one host as a task any executor runs (``tpudoctor.profile.executor``)."""


def _notes(capture: ProfileCapture) -> list[str]:
    notes = []
    if not capture.has_device_planes:
        names = sorted({name for host in capture.hosts.values() for name in host.planes["plane_name"]})
        notes.append(
            "no device planes (" + ", ".join(prefix + "*" for prefix in DEVICE_PLANE_PREFIXES) + ") in this capture; "
            f"it has only: {', '.join(names)}. Device-time analyses do not apply: the capture was taken "
            "without device tracing, on a machine without accelerators, or the TPU runtime wrote no trace."
        )
    for hostname, host in capture.hosts.items():
        if int(host.planes["n_events"].sum()) == 0:
            notes.append(f"host {hostname}: no events at all in any plane")
        for message in host.errors:
            notes.append(f"host {hostname}: profiler error: {message}")
        for message in host.warnings:
            notes.append(f"host {hostname}: profiler warning: {message}")
    return notes


def read_bytes(location: str) -> bytes:
    """The bytes of a host file; a clear ``InputError`` when it cannot be read."""
    if locations.is_gcs(location):
        return locations.read_bytes(location)
    from tpudoctor.profile.memory import ensure_memory_for

    try:
        ensure_memory_for(Path(location).stat().st_size, location)
        return Path(location).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {location}: {exc.strerror or exc}") from exc
