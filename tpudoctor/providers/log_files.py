"""The user's own logs (``--log-file``: a file, ``-`` for stdin, a FIFO or ``<(cmd)``, a folder), diagnosed
while streaming."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.findings import Scope
from tpudoctor.provider import FactProvider


def scan_summary(diagnoser: Any, sources: list[dict[str, Any]]) -> dict[str, Any]:
    """The fact value every log provider returns: plain data, so checks and examples share it."""
    return {
        "sources": sources,
        "lines_scanned": diagnoser.lines_scanned,
        "events_scanned": diagnoser.events_scanned,
        "catalog_version": diagnoser.catalog.version,
        "diagnoses": [d.to_dict() for d in diagnoser.diagnoses()],
    }


def local_scope(ctx: RunContext) -> Scope | None:
    """Logs read on this machine belong to the worker the run was told it is (``--worker``), if any."""
    return Scope.of(workers=[ctx.target.worker]) if ctx.target.worker not in (None, "") else None


class LogFilesProvider(FactProvider):
    name = "log_files"
    provides = ("logs.user_files",)
    timeout_s = 600.0  # a 1 GB log takes about a minute

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        from tpudoctor.logdiag import Diagnoser
        from tpudoctor.logdiag.reading import feed_path

        paths = list(ctx.options.log_files)
        if not paths:
            return {"logs.user_files": Unavailable("no log file given (use --log-file FILE, or '-' for stdin)")}
        diagnoser = Diagnoser()
        scope = local_scope(ctx)
        sources = [read.to_dict() for path in paths for read in feed_path(diagnoser, path, scope=scope)]
        return {"logs.user_files": scan_summary(diagnoser, sources)}
