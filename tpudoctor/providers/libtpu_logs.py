"""libtpu's own logs on this VM: ``$TPU_LOG_DIR`` or ``/tmp/tpu_logs``, newest files first."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.provider import FactProvider
from tpudoctor.providers.log_files import local_scope, scan_summary

DEFAULT_TPU_LOG_DIR = "/tmp/tpu_logs"
MAX_FILES = 6


def libtpu_log_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """TPU_LOG_DIR when set (and not 'disabled'), and always the default: libtpu has been seen
    ignoring TPU_LOG_DIR (ray-project/ray#47737). ``TPUDOCTOR_DEFAULT_TPU_LOG_DIR`` moves the default, as
    ``TPUDOCTOR_DEV_ROOT`` moves /dev (a copy of a worker's logs; tests keep this machine's own out)."""
    env = os.environ if env is None else env
    dirs = []
    custom = env.get("TPU_LOG_DIR")
    if custom and custom.lower() != "disabled":
        dirs.append(Path(custom))
    dirs.append(Path(env.get("TPUDOCTOR_DEFAULT_TPU_LOG_DIR") or DEFAULT_TPU_LOG_DIR))
    seen, unique = set(), []
    for d in dirs:
        key = str(d.resolve()) if d.exists() else str(d)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return unique


def recent_log_files(dirs: list[Path], since_s: float) -> list[Path]:
    """Regular files (not the ``*.INFO`` symlinks) changed within the window, newest first."""
    now = time.time()
    found = []
    for d in dirs:
        try:
            entries = list(d.iterdir())
        except OSError:
            continue
        for path in entries:
            try:
                if path.is_symlink() or not path.is_file():
                    continue
                mtime = path.stat().st_mtime
            except OSError:
                continue
            if now - mtime <= since_s:
                found.append((mtime, path))
    found.sort(reverse=True)
    return [p for _, p in found[:MAX_FILES]]


class LibtpuLogsProvider(FactProvider):
    name = "libtpu_logs"
    provides = ("logs.libtpu",)
    timeout_s = 120.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        from tpudoctor.logdiag import Diagnoser
        from tpudoctor.logdiag.reading import feed_path

        dirs = libtpu_log_dirs()
        shown = ", ".join(str(d) for d in dirs)
        if not any(d.is_dir() for d in dirs):
            return {"logs.libtpu": Unavailable(
                f"no libtpu log directory ({shown}); libtpu writes one only where a framework opened a TPU")}
        files = recent_log_files(dirs, ctx.options.since_s)
        if not files:
            return {"logs.libtpu": Unavailable(
                f"no libtpu log file in {shown} changed in the last {ctx.options.since_s:g}s (use --since to look further back)")}
        diagnoser = Diagnoser()
        sources = [read.to_dict() for path in files for read in feed_path(diagnoser, str(path), scope=local_scope(ctx))]
        return {"logs.libtpu": scan_summary(diagnoser, sources)}
