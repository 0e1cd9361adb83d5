"""Writing reports: to stdout, or to ``-o FILE`` without ever following a symlink.

A report may be written by a privileged CI job into a shared folder; opening with
``O_NOFOLLOW`` and replacing through a temporary file in the same folder means a planted
symlink cannot redirect the write onto another file.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tpudoctor.errors import UsageError

REPORT_FILE_MODE = 0o644


def write_text(path: str | os.PathLike[str] | None, text: str) -> None:
    if path in (None, "-"):
        sys.stdout.write(text)
        if not text.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.flush()
        return
    target = Path(path)
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


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
