"""Where tpudoctor reads and writes files: a local path or a ``gs://bucket/prefix``, through one set of functions.

Profiles (``profile analyze``, ``compare --history``), reports (``-o gs://...``) and the pod's report store
(``merge``) all read, list and write here. Cloud Storage is reached through the run's session
(``tpudoctor.gcp.session``: credentials, the timeout of every call, bounded retries); a failure becomes one
clear ``InputError`` saying what failed, why, and the role or command that fixes it
(``tpudoctor.gcp.errors.user_error``). Code handed no session (a worker process reading a capture, a library
caller) uses its own process's (``process_session``). Local files are read as they are and written by the
safe writer (``tpudoctor.output``: never through a symbolic link).
Reports are written by ``tpudoctor.output`` alone, through ``storage_call``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tpudoctor.cloud_knowledge.uri import (
    split_user_gs_uri as split_gs_uri,  # a user-given URI: checked before any call
)
from tpudoctor.errors import InputError

T = TypeVar("T")

GCS_SCHEME = "gs://"
DEFAULT_TIMEOUT_S = 60.0
"""Each Cloud Storage call's limit where the caller's session does not say (a capture's host file is big)."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """A file found by a listing."""

    location: str
    """Its full path or ``gs://`` URI."""
    size_bytes: int
    updated_s: float | None
    """Last modified, seconds since the epoch (the server's clock for an object)."""
    created: _dt.datetime | None = None
    """When an object was created (None for a local file)."""


def is_gcs(location: str | None) -> bool:
    return bool(location) and str(location).startswith(GCS_SCHEME)


def session_or_process(session):
    """The session a caller handed, else this process's (``process_session``)."""
    if session is not None:
        return session
    from tpudoctor.gcp.session import process_session

    return process_session(DEFAULT_TIMEOUT_S)


def storage_call(session, what: str, bucket: str, permission: str, fn: Callable[[Any], T]) -> T:
    """``fn(storage)`` on the session's Cloud Storage; any failure, credentials included, is an ``InputError``."""
    from tpudoctor.gcp.errors import ApiCallFailed, user_error

    storage = None
    try:
        storage = session.storage
        return fn(storage)
    except ApiCallFailed as exc:
        raise user_error(exc.failure, what, identity=storage.identity if storage else None, bucket=bucket,
                         permission=permission) from None


# --- reading ------------------------------------------------------------------------------------

def read_bytes(location: str, *, session=None) -> bytes:
    """The whole file or object; an ``InputError`` that says why it cannot be read."""
    if is_gcs(location):
        bucket, name = split_gs_uri(location)
        return storage_call(session_or_process(session), f"cannot read {location}", bucket, "storage.objects.get",
                             lambda storage: storage.read_object(bucket, name))
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {location}: {exc.strerror or exc}") from None


def local_copy(location: str, folder: str, *, session=None) -> str:
    """A local path holding the file: the path itself, or the object downloaded (streamed) into ``folder``.
    For readers that need a file (seek, memory map); an ``InputError`` that says why it cannot be read."""
    if not is_gcs(location):
        return location
    bucket, name = split_gs_uri(location)
    path = str(Path(folder) / (name.rsplit("/", 1)[-1] or "object"))
    storage_call(session_or_process(session), f"cannot read {location}", bucket, "storage.objects.get",
                  lambda storage: storage.download_object(bucket, name, path))
    return path


# --- listing ------------------------------------------------------------------------------------

def special_file_kind(location: str) -> str | None:
    """What a local path that is neither a regular file nor a folder is ("a FIFO (named pipe)", "a character
    device"): said by name where a report or capture was expected, rather than "empty" or "does not exist"."""
    import stat

    if is_gcs(location):
        return None
    try:
        mode = Path(location).stat().st_mode
    except (OSError, ValueError):
        return None
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), None)


def list_level(location: str, *, session=None) -> tuple[list[str], list[str]]:
    """(file names, folder names) directly under a folder or ``gs://`` prefix, each sorted; a folder that
    does not exist lists nothing."""
    if is_gcs(location):
        bucket, prefix = split_gs_uri(location)
        prefix = prefix.rstrip("/") + "/" if prefix.rstrip("/") else ""
        names, prefixes = storage_call(session_or_process(session), f"cannot list gs://{bucket}/{prefix}", bucket,
                                        "storage.objects.list", lambda storage: storage.list_level(bucket, prefix))
        return (sorted(name[len(prefix):] for name in names if not name.endswith("/")),
                sorted(p[len(prefix):].rstrip("/") for p in prefixes))
    folder = Path(location)
    if not folder.is_dir():
        return [], []
    entries = list(folder.iterdir())
    return sorted(e.name for e in entries if e.is_file()), sorted(e.name for e in entries if e.is_dir())


def list_files(location: str, *, suffix: str = "", limit: int, session=None, what: str = "folder",
               missing_hint: str | None = None) -> list[Entry]:
    """The files directly under a folder or ``gs://`` prefix (not deeper) whose names end in ``suffix``, in
    name order. More than ``limit`` under a prefix, or a local folder that is not there, is an ``InputError``
    (naming the folder as ``what``; ``missing_hint`` says what to give instead)."""
    if is_gcs(location):
        bucket, prefix = split_gs_uri(location)
        prefix = prefix.rstrip("/") + "/" if prefix.rstrip("/") else ""
        objects, truncated = storage_call(session_or_process(session), f"cannot list {location}", bucket,
                                           "storage.objects.list",
                                           lambda storage: storage.list_objects(bucket, prefix, limit=limit))
        if truncated:
            raise InputError(f"{location} holds more than {limit} objects", hint="point at a narrower prefix")
        found = []
        for obj in objects:
            rest = obj["name"][len(prefix):]
            if rest.endswith(suffix) and rest and "/" not in rest:
                updated = _dt.datetime.fromisoformat(obj["updated"]).timestamp() if obj.get("updated") else None
                created = _dt.datetime.fromisoformat(obj["created"]) if obj.get("created") else None
                found.append(Entry(f"gs://{bucket}/{obj['name']}", obj["size_bytes"], updated, created))
        return sorted(found, key=lambda e: e.location)
    folder = Path(location)
    if not folder.is_dir():
        raise InputError(f"{what} {location} does not exist or is not a folder", hint=missing_hint)
    found = []
    for path in folder.iterdir():
        if path.name.endswith(suffix) and path.is_file():
            stat = path.stat()
            found.append(Entry(str(path), stat.st_size, stat.st_mtime))
    return sorted(found, key=lambda e: e.location)


def find_object(location: str, *, session=None) -> Entry | None:
    """The one object at a ``gs://`` URI, or None where there is none."""
    bucket, name = split_gs_uri(location)
    objects, _truncated = storage_call(session_or_process(session), f"cannot list {location}", bucket, "storage.objects.list",
                                        lambda storage: storage.list_objects(bucket, name, limit=2))
    for obj in objects:
        if obj["name"] == name:
            created = _dt.datetime.fromisoformat(obj["created"]) if obj.get("created") else None
            updated = _dt.datetime.fromisoformat(obj["updated"]).timestamp() if obj.get("updated") else None
            return Entry(location, obj["size_bytes"], updated, created)
    return None
