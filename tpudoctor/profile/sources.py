"""Find the host files of a capture: a ``.xplane.pb``, a run directory or a logdir, local or ``gs://``.

A logdir is what TensorBoard and ``tf.profiler``/``jax.profiler`` write:
``<logdir>/plugins/profile/<run>/<host>.xplane.pb`` with one file per host and one ``<run>``
folder (a timestamp such as ``2024_09_04_00_57_49``) per capture. The newest run is used unless
one is named.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from tpudoctor.errors import InputError, UsageError

XPLANE_SUFFIX = ".xplane.pb"
PROFILE_SUBDIR = ("plugins", "profile")
GCS_TIMEOUT_S = 60.0


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
    if text.startswith("gs://"):
        return _resolve_listing(text, run, _GcsLister(text))
    local = Path(text).expanduser()
    if not local.exists():
        raise InputError(f"{text} does not exist", hint="pass a .xplane.pb file, a run directory or a logdir")
    if local.is_file():
        if run is not None:
            raise UsageError("--run applies to a logdir, not to a single .xplane.pb file")
        return ResolvedCapture(source=text, run=None, hosts=(HostFile(hostname_of(local.name), str(local)),))
    return _resolve_listing(text, run, _LocalLister(local))


class _LocalLister:
    def __init__(self, root: Path):
        self.root = root

    def files(self, relative: str) -> list[str]:
        folder = self.root / relative if relative else self.root
        if not folder.is_dir():
            return []
        return sorted(entry.name for entry in folder.iterdir() if entry.is_file())

    def dirs(self, relative: str) -> list[str]:
        folder = self.root / relative if relative else self.root
        if not folder.is_dir():
            return []
        return sorted(entry.name for entry in folder.iterdir() if entry.is_dir())

    def location(self, relative: str, name: str) -> str:
        return str((self.root / relative / name) if relative else self.root / name)


class _GcsLister:
    """Lists ``gs://`` prefixes with google-cloud-storage (honours ``STORAGE_EMULATOR_HOST``)."""

    def __init__(self, uri: str):
        bucket, _, prefix = uri[len("gs://"):].partition("/")
        if not bucket:
            raise UsageError(f"{uri} names no bucket")
        self.bucket_name = bucket
        self.prefix = prefix.rstrip("/")
        self.client = gcs_client()
        self._cache: dict[str, tuple[list[str], list[str]]] = {}

    def _list(self, relative: str) -> tuple[list[str], list[str]]:
        if relative in self._cache:
            return self._cache[relative]
        prefix = "/".join(part for part in (self.prefix, relative) if part)
        prefix = f"{prefix}/" if prefix else ""
        try:
            blobs = self.client.list_blobs(self.bucket_name, prefix=prefix, delimiter="/", timeout=GCS_TIMEOUT_S)
            files = sorted(blob.name[len(prefix):] for blob in blobs if not blob.name.endswith("/"))
            dirs = sorted(p[len(prefix):].rstrip("/") for p in blobs.prefixes)
        except Exception as exc:  # noqa: BLE001 - every GCS failure is an input problem for the user
            raise InputError(f"cannot list gs://{self.bucket_name}/{prefix}: {_short(exc)}",
                             hint="check the path and that your credentials can read the bucket") from exc
        self._cache[relative] = (files, dirs)
        return files, dirs

    def files(self, relative: str) -> list[str]:
        return self._list(relative)[0]

    def dirs(self, relative: str) -> list[str]:
        return self._list(relative)[1]

    def location(self, relative: str, name: str) -> str:
        parts = [part for part in (self.prefix, relative, name) if part]
        return f"gs://{self.bucket_name}/" + "/".join(parts)

    def is_single_object(self) -> bool:
        return self.prefix.endswith(XPLANE_SUFFIX)


def _resolve_listing(source: str, run: str | None, lister) -> ResolvedCapture:
    if isinstance(lister, _GcsLister) and lister.is_single_object():
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


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


def gcs_client():
    """A storage client; anonymous when ``STORAGE_EMULATOR_HOST`` points at an emulator."""
    from google.cloud import storage

    if os.environ.get("STORAGE_EMULATOR_HOST"):
        from google.auth.credentials import AnonymousCredentials

        return storage.Client(project=os.environ.get("GOOGLE_CLOUD_PROJECT", "tpudoctor-emulator"),
                              credentials=AnonymousCredentials())
    try:
        return storage.Client()
    except Exception as exc:  # noqa: BLE001 - missing credentials or project
        raise InputError(f"cannot reach Cloud Storage: {_short(exc)}",
                         hint="run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS") from exc


def read_bytes(location: str) -> bytes:
    """The bytes of a host file; a clear ``InputError`` when it cannot be read."""
    if location.startswith("gs://"):
        bucket, _, name = location[len("gs://"):].partition("/")
        try:
            return gcs_client().bucket(bucket).blob(name).download_as_bytes(timeout=GCS_TIMEOUT_S)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"cannot read {location}: {_short(exc)}") from exc
    from tpudoctor.profile.memory import ensure_memory_for

    try:
        ensure_memory_for(Path(location).stat().st_size, location)
        return Path(location).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {location}: {exc.strerror or exc}") from exc
