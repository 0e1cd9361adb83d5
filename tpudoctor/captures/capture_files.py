"""Find the host files of a capture: a ``.xplane.pb``, a run directory or a logdir, local or ``gs://`` (for
``profile`` and ``memory`` alike).

A logdir is what TensorBoard and ``tf.profiler``/``jax.profiler`` write:
``<logdir>/plugins/profile/<run>/<host>.xplane.pb`` with one file per host and one ``<run>``
folder (a timestamp such as ``2024_09_04_00_57_49``) per capture. The newest run is used unless
one is named.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from tpudoctor import locations
from tpudoctor.errors import InputError, UsageError

XPLANE_SUFFIX = ".xplane.pb"
PROFILE_SUBDIR = ("plugins", "profile")


@dataclasses.dataclass(frozen=True)
class HostFile:
    hostname: str
    location: str  # a local path or gs://bucket/object


@dataclasses.dataclass(frozen=True)
class ResolvedCapture:
    source: str
    run: str | None
    hosts: tuple[HostFile, ...]
    runs_available: tuple[str, ...] = ()


def hostname_of(file_name: str) -> str:
    name = file_name.rsplit("/", 1)[-1]
    return name[: -len(XPLANE_SUFFIX)] if name.endswith(XPLANE_SUFFIX) else name


def resolve(path: str | os.PathLike[str], run: str | None = None) -> ResolvedCapture:
    text = os.fspath(path)
    if locations.is_gcs(text):
        from tpudoctor.cloud_knowledge.uri import split_user_gs_uri

        split_user_gs_uri(text)  # a bucket, a valid one: said before any listing or credentials lookup
        return _resolve_listing(text, run, _Lister(text))
    local = Path(text).expanduser()
    if not local.exists():
        raise InputError(f"{text} does not exist", hint="pass a .xplane.pb file, a run directory or a logdir")
    if local.is_file():
        if run is not None:
            raise UsageError("--run applies to a logdir, not to a single .xplane.pb file")
        return ResolvedCapture(source=text, run=None, hosts=(HostFile(hostname_of(local.name), str(local)),))
    return _resolve_listing(text, run, _Lister(str(local)))


class _Lister:
    """One folder level at a time under a local folder or a ``gs://`` prefix (``tpudoctor.locations``),
    each level listed once."""

    def __init__(self, root: str):
        self.root = root
        self._cache: dict[str, tuple[list[str], list[str]]] = {}

    def _list(self, relative: str) -> tuple[list[str], list[str]]:
        if relative not in self._cache:
            self._cache[relative] = locations.list_level(self.location(relative, ""))
        return self._cache[relative]

    def files(self, relative: str) -> list[str]:
        return self._list(relative)[0]

    def dirs(self, relative: str) -> list[str]:
        return self._list(relative)[1]

    def location(self, relative: str, name: str) -> str:
        parts = [part for part in (relative, name) if part]
        if not locations.is_gcs(self.root):
            return str(Path(self.root).joinpath(*parts))
        return "/".join([self.root.rstrip("/"), *parts])

    def is_single_object(self) -> bool:
        return locations.is_gcs(self.root) and self.root.rstrip("/").endswith(XPLANE_SUFFIX)


def _resolve_listing(source: str, run: str | None, lister) -> ResolvedCapture:
    if lister.is_single_object():
        if run is not None:
            raise UsageError("--run applies to a logdir, not to a single .xplane.pb file")
        return ResolvedCapture(source=source, run=None, hosts=(HostFile(hostname_of(source), source),))
    here = _xplanes(lister, "")
    if here:  # a run directory
        if run is not None:
            raise UsageError(f"{source} is a run directory already (it holds .xplane.pb files); drop --run")
        return ResolvedCapture(source=source, run=Path(source.rstrip("/")).name or None,
                               hosts=tuple(HostFile(hostname_of(name), lister.location("", name)) for name in here))
    runs_root = ""
    if PROFILE_SUBDIR[0] in lister.dirs(""):
        runs_root = "/".join(PROFILE_SUBDIR)
    elif Path(source.rstrip("/")).name != "profile" or Path(source.rstrip("/")).parent.name != "plugins":
        special = locations.special_file_kind(source)
        if special is not None:
            raise InputError(f"{source} is {special}, not a profile",
                             hint="pass the logdir given to the profiler, a run directory "
                                  "<logdir>/plugins/profile/<run>/, one .xplane.pb file, or a report JSON")
        listed = lister.files("") + lister.dirs("")
        raise InputError(
            f"{source} holds no profile: no .xplane.pb files and no plugins/profile/ folder"
            + (f" (it holds: {', '.join(listed[:8])}{', ...' if len(listed) > 8 else ''})" if listed else " (it is empty)"),
            hint="pass the logdir given to the profiler, a run directory <logdir>/plugins/profile/<run>/, "
                 "or one .xplane.pb file",
        )
    runs = [name for name in lister.dirs(runs_root) if _xplanes(lister, _join(runs_root, name))]
    if not runs:
        raise InputError(f"{source} has no profile runs: {_join(runs_root, '') or '.'} holds no run folder "
                         "with .xplane.pb files",
                         hint="the capture may have failed or still be running; capture again with "
                              "`tpudoctor profile capture` or check the logdir")
    if run is None:
        chosen = runs[-1]  # run folders are timestamps: the newest sorts last
    elif run in runs:
        chosen = run
    else:
        raise UsageError(f"run {run!r} is not in {source}; runs: {', '.join(runs)}")
    folder = _join(runs_root, chosen)
    hosts = tuple(HostFile(hostname_of(name), lister.location(folder, name)) for name in _xplanes(lister, folder))
    return ResolvedCapture(source=source, run=chosen, hosts=hosts, runs_available=tuple(runs))


def _xplanes(lister, relative: str) -> list[str]:
    return [name for name in lister.files(relative) if name.endswith(XPLANE_SUFFIX)]


def _join(*parts: str) -> str:
    return "/".join(part for part in parts if part)

