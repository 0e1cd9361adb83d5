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

from tpudoctor.cloud_knowledge.uri import split_gs_uri
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
    """Lists ``gs://`` prefixes through ``tpudoctor.gcp.storage`` (honours ``STORAGE_EMULATOR_HOST``)."""

    def __init__(self, uri: str):
        bucket, prefix = split_gs_uri(uri)
        self.bucket_name = bucket
        self.prefix = prefix.rstrip("/")
        self._cache: dict[str, tuple[list[str], list[str]]] = {}

    def _list(self, relative: str) -> tuple[list[str], list[str]]:
        if relative in self._cache:
            return self._cache[relative]
        prefix = "/".join(part for part in (self.prefix, relative) if part)
        prefix = f"{prefix}/" if prefix else ""
        names, prefixes = _gcs_call(lambda api: api.list_level(self.bucket_name, prefix),
                                    f"cannot list gs://{self.bucket_name}/{prefix}", self.bucket_name)
        files = sorted(name[len(prefix):] for name in names if not name.endswith("/"))
        dirs = sorted(p[len(prefix):].rstrip("/") for p in prefixes)
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


def storage_api():
    """Cloud Storage with a timeout per call, bounded retries and the shared error mapping, plus who asked."""
    from tpudoctor.gcp.storage import storage_for_caller

    return storage_for_caller(timeout_s=GCS_TIMEOUT_S, project=os.environ.get("GOOGLE_CLOUD_PROJECT"))


def _gcs_call(fn, what: str, bucket: str):
    """``fn(api)``; any failure becomes an ``InputError`` that says why and how to fix it."""
    from tpudoctor.cloud_knowledge import gcloud
    from tpudoctor.cloud_knowledge.iam import ADC_SETUP_COMMANDS
    from tpudoctor.gcp.errors import NO_CREDENTIALS, NOT_FOUND, PERMISSION_DENIED, ApiCallFailed

    identity = None
    try:
        api, identity = storage_api()
        return fn(api)
    except ApiCallFailed as exc:
        failure = exc.failure
        if failure.kind == PERMISSION_DENIED:
            member = identity.iam_member if identity else None
            role = failure.role or "roles/storage.objectViewer"
            raise InputError(f"{what}: permission denied: {(identity and identity.principal) or 'the caller'} "
                             f"lacks {failure.permission or 'storage.objects.list'} (granted by {role})",
                             hint=f"grant it: {gcloud.bucket_role_binding(bucket, member, role)}") from None
        if failure.kind == NO_CREDENTIALS:
            raise InputError(f"{what}: no Google Cloud credentials: {failure.message}",
                             hint=" or ".join(ADC_SETUP_COMMANDS)) from None
        if failure.kind == NOT_FOUND:
            raise InputError(f"{what}: not found ({failure.message})",
                             hint="check the bucket and path (gcloud storage ls gs://BUCKET/PATH)") from None
        tries = f" after {failure.attempts} attempts" if failure.attempts > 1 else ""
        raise InputError(f"{what}: {failure.kind.replace('_', ' ')}{tries}: {failure.message}",
                         hint="check the path, your network and that your credentials can read the bucket") from None


def read_bytes(location: str) -> bytes:
    """The bytes of a host file; a clear ``InputError`` when it cannot be read."""
    if location.startswith("gs://"):
        bucket, name = split_gs_uri(location)
        return _gcs_call(lambda api: api.read_object(bucket, name), f"cannot read {location}", bucket)
    from tpudoctor.profile.memory import ensure_memory_for

    try:
        ensure_memory_for(Path(location).stat().st_size, location)
        return Path(location).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {location}: {exc.strerror or exc}") from exc
