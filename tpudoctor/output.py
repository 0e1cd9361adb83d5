"""The one report writer: every command's ``-o`` (and ``bench``'s extra files) goes through here.

``check_output`` runs before the slow work: it refuses an ``-o`` that cannot be written (a folder, a link, a
read-only folder, an invalid ``gs://`` URI, Cloud Storage without credentials) and one that names an input
of the run (the report would overwrite what it reads). ``write_text`` writes standard output, a local file,
or one Cloud Storage object, uploaded through the run's Google Cloud session (``tpudoctor.locations``: every
call has a timeout; a failure is one clear exit-2 error). A bucket is written only because ``-o`` named it.

A report may be written by a privileged CI job into a shared folder; opening with
``O_NOFOLLOW`` and replacing through a temporary file in the same folder means a planted
symlink cannot redirect the write onto another file.

Two exceptions are deliberate: the names of standard output (``/dev/stdout``, ``/dev/fd/1``,
``/proc/self/fd/1``; links by nature) mean standard output, and an existing character device or
pipe (``/dev/null``, a named pipe) is written in place, opened without following a link.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from tpudoctor.errors import UsageError

REPORT_FILE_MODE = 0o644
STDOUT_NAMES = frozenset({"-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})
CONTENT_TYPES = {"json": "application/json", "junit": "application/xml", "html": "text/html",
                 "markdown": "text/markdown", "text": "text/plain"}
SUFFIX_FORMATS = {".json": "json", ".xml": "junit", ".html": "html", ".md": "markdown"}


def write_text(path: str | os.PathLike[str] | None, text: str, *, fmt: str | None = None, session=None) -> None:
    """``text`` to standard output (None or ``-``), a local file (never through a link), or a ``gs://`` object
    (``fmt`` sets its content type, else its name's suffix; ``session``: the run's Google Cloud session, else
    this process's)."""
    if path is not None and _is_gcs(os.fspath(path)):
        _upload(os.fspath(path), text, fmt=fmt, session=session)
        return
    if path is None or os.fspath(path) in STDOUT_NAMES:
        sys.stdout.write(text)
        if text and not text.endswith("\n"):  # an empty answer (docs --check, all current) prints nothing
            sys.stdout.write("\n")
        sys.stdout.flush()
        return
    target = Path(path)
    if _is_stream_device(target):
        _write_to_stream_device(target, text)
        return
    if target.is_symlink():
        raise UsageError(f"refusing to write {target}: it is a symbolic link", hint="pass a regular file path to -o")
    if target.exists() and not target.is_file():
        raise UsageError(f"refusing to write {target}: it exists and is not a regular file")
    folder = target.parent if str(target.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o755)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, REPORT_FILE_MODE & ~_umask())
        os.replace(tmp, target)  # rename replaces a link itself, never writes through it
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from exc


def check_output(path: str | os.PathLike[str] | None, *, inputs: Iterable[str | os.PathLike[str] | None] = (),
                 session=None) -> None:
    """Refuse, before the work that fills it, an ``-o`` that ``write_text`` would refuse or that names one of
    ``inputs`` (a file given, or a file inside a folder given): a slow run that ends in 'cannot write' loses
    its work, and one that writes over its input loses the input. A ``gs://`` destination must be a valid
    object URI, and the session must have credentials for Cloud Storage."""
    if path is None or os.fspath(path) in STDOUT_NAMES:
        return
    location = os.fspath(path)
    _refuse_an_input(location, [os.fspath(i) for i in inputs if i is not None])
    if _is_gcs(location):
        _check_gcs_destination(location, session)
        return
    _check_local_destination(Path(location))


def check_writable(path: str | os.PathLike[str] | None) -> None:
    """``check_output`` for a destination that has no inputs to spare (``bench``'s extra files)."""
    check_output(path)


def _check_local_destination(target: Path) -> None:
    if _is_stream_device(target):
        return
    if target.is_symlink():
        raise UsageError(f"refusing to write {target}: it is a symbolic link", hint="pass a regular file path to -o")
    if target.is_dir():
        raise UsageError(f"cannot write {target}: it is a folder", hint=f"name a file in it, e.g. -o {target / 'report.json'}")
    if target.exists() and not target.is_file():
        raise UsageError(f"refusing to write {target}: it exists and is not a regular file")
    folder = target.parent
    while not folder.exists() and folder != folder.parent:  # the folders write_text would create
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"cannot write {target}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {target}: {folder} is not writable")


def _refuse_an_input(location: str, inputs: list[str]) -> None:
    """Exit 2 when ``location`` is one of ``inputs``: the same object URI, the same file (``samefile``: links
    and other spellings included), or a file inside a folder given as an input."""
    if _is_gcs(location):
        clash = next((i for i in inputs if _is_gcs(i) and i.rstrip("/") == location.rstrip("/")), None)
    else:
        clash = next((i for i in inputs if not _is_gcs(i) and i not in STDOUT_NAMES and _holds(i, location)), None)
    if clash is not None:
        shown = "" if clash == location else f" ({clash})"
        raise UsageError(f"-o {location} names an input of this run{shown}: the report would overwrite it",
                         hint="write the report somewhere else, e.g. -o report.txt")


def _holds(given: str, location: str) -> bool:
    """``location`` is the file ``given`` or an existing file under the folder ``given``."""
    try:
        if not os.path.exists(location) or not os.path.exists(given):
            return False
        if os.path.samefile(given, location):
            return True
        if not os.path.isdir(given):
            return False
        folder, target = os.path.realpath(given), os.path.realpath(location)
        return os.path.commonpath([folder, target]) == folder
    except (OSError, ValueError):
        return False


def _is_gcs(location: str) -> bool:
    from tpudoctor.locations import is_gcs

    return is_gcs(location)


def _check_gcs_destination(location: str, session) -> None:
    """An object URI whose bucket name can exist and whose object name is not a folder; credentials that
    Cloud Storage takes (resolved now, not after the run: without them this is exit 2 at once)."""
    from tpudoctor import locations
    from tpudoctor.cloud_knowledge.uri import parse_path, split_gs_uri

    problems = [p for p in parse_path(location, "report")["problems"] if p["level"] == "fail"]
    if problems:
        raise UsageError(f"-o {location}: {problems[0]['message']}",
                         hint=f"did you mean {problems[0]['suggestion']}?" if problems[0].get("suggestion") else
                         "use gs://BUCKET/path/report.json")
    bucket, name = split_gs_uri(location)
    if not name or name.endswith("/"):
        raise UsageError(f"-o {location}: give an object name, e.g. gs://{bucket}/reports/report.json")
    locations.storage_call(locations.session_or_process(session), f"cannot write {location}", bucket,
                           "storage.objects.create", lambda storage: storage.identity)


def _upload(location: str, text: str, *, fmt: str | None, session) -> None:
    from tpudoctor import locations
    from tpudoctor.cloud_knowledge.uri import split_gs_uri

    bucket, name = split_gs_uri(location)
    if not name or name.endswith("/"):
        raise UsageError(f"-o {location}: give an object name, e.g. gs://{bucket}/reports/report.json")
    fmt = fmt or SUFFIX_FORMATS.get(Path(name).suffix.lower(), "text")
    locations.storage_call(locations.session_or_process(session), f"cannot write {location}", bucket,
                           "storage.objects.create",
                           lambda storage: storage.put_text(bucket, name, text, CONTENT_TYPES.get(fmt, "text/plain")))


def _is_stream_device(target: Path) -> bool:
    try:
        mode = os.lstat(target).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _write_to_stream_device(target: Path, text: str) -> None:
    """``/dev/null`` or a named pipe: nothing to replace, so write in place; never through a link."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):  # swapped between the check and the open
            raise UsageError(f"refusing to write {target}: it changed while it was being opened")
        with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as handle:
            handle.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
