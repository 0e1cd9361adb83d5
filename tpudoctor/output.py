"""Writing reports: to stdout, or to ``-o FILE`` without ever following a symlink.

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
from pathlib import Path

from tpudoctor.errors import UsageError

REPORT_FILE_MODE = 0o644
STDOUT_NAMES = frozenset({"-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})


def write_text(path: str | os.PathLike[str] | None, text: str) -> None:
    if path is None or os.fspath(path) in STDOUT_NAMES:
        sys.stdout.write(text)
        if not text.endswith("\n"):
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


def check_writable(path: str | os.PathLike[str] | None) -> None:
    """Refuse an ``-o`` that ``write_text`` would refuse, before the work that fills it: a folder, a link, a
    parent that is a file, a folder that cannot be written. (A slow run that ends in 'cannot write' loses it.)"""
    if path is None or os.fspath(path) in STDOUT_NAMES or os.fspath(path).startswith("gs://"):
        return
    target = Path(path)
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
