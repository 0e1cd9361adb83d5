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
        summary = scan_summary(diagnoser, sources)
        if ctx.options.baseline_log:
            with_baseline(summary, paths, ctx.options.baseline_log)
        if ctx.target.worker not in (None, ""):
            with_templates(summary, paths)
        return {"logs.user_files": summary}


BASELINE_TOP = 3


def with_templates(summary: dict[str, Any], paths: list[str]) -> None:
    """A worker's report carries its log's templates (masked, bounded; not the log), so ``merge`` can name the
    worker whose log has lines its peers' lack. Only a file's: stdin or a FIFO is read once, by the diagnosis."""
    from pathlib import Path

    from tpudoctor.logdiag.baseline import summarize_file

    files = [p for p in paths if p != "-" and Path(p).is_file()]
    if not files:
        return
    kept, total = summarize_file(files[0])
    summary["templates"] = {"log": files[0], "templates_total": total,
                            "top": [{"template": t.template, "count": t.count, "error": t.error_form} for t in kept]}


def with_baseline(summary: dict[str, Any], paths: list[str], baseline: str) -> None:
    """The diff against the last good run: its ranked new templates join the fact, and the top diagnosis (an
    unrecognised failure, or "cannot tell") quotes the top ones as its evidence."""
    from pathlib import Path

    from tpudoctor.logdiag.baseline import compare_files

    failing = next((p for p in paths if p != "-" and Path(p).is_file()), None)
    if failing is None:
        summary["baseline_diff"] = {"unavailable": "the failing log is not a file (stdin, a FIFO or a folder)"}
        return
    diff = compare_files(failing, baseline)
    top: list[dict[str, Any]] = [{"line_no": d.first_line_no, "line": d.first_line[:300], "count_failing": d.failing_count,
            "count_good": d.good_count, "new": d.new} for d in diff.top(BASELINE_TOP)]
    summary["baseline_diff"] = {"failing_log": failing, "good_log": baseline, "failing_lines": diff.failing_lines,
                                "good_lines": diff.good_lines, "templates_failing": diff.templates_failing,
                                "templates_good": diff.templates_good, "new_or_more_frequent": len(diff.ranked),
                                "top": top}
    diagnoses = summary["diagnoses"]
    if diagnoses and diagnoses[0].get("id") in ("unrecognised-failure", "outcome-unknown") and top:
        diagnoses[0]["message"] = (f"{diagnoses[0].get('message', '')} New since the last good run "
                                   f"({baseline}): {failing}:{top[0]['line_no']}: {top[0]['line'][:200]}")
        diagnoses[0].setdefault("evidence", {})["new_since_good_run"] = [
            f"{failing}:{t['line_no']}: {t['line']}" + ("" if t["new"] else f" ({t['count_failing']} times, "
                                                         f"{t['count_good']} in the good run)") for t in top]
