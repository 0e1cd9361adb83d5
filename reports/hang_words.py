"""Shared wording for the hang renderers: who (workers, pids), groups, frames as py-spy prints them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tpudoctor.hang.rule import Category, is_library

if TYPE_CHECKING:
    from tpudoctor.hang.model import Frame
    from tpudoctor.hang.report import HangReport, ProcessState, StackGroup

MAX_FRAMES = 14
VERDICT_WORDS = {"hung": "HUNG", "progressing": "PROGRESSING", "unknown": "UNKNOWN", "no_process": "NO PROCESS"}


def members_words(members: Sequence[tuple[str | None, int]]) -> str:
    """``worker 5 (pid 1234)``, ``63 workers: 0-4, 6-63``, ``pid 6454``, ``3 processes (pids 1, 2, 3)``."""
    from tpudoctor.pod.worker_ids import describe_workers

    workers = sorted({w for w, _ in members if w is not None}, key=lambda w: (0, int(w), w) if w.isdigit() else (1, 0, w))
    pids = [p for _, p in members if p]
    if workers:
        if len(workers) == 1:  # pid 0: a pasted dump that does not name its process
            return f"worker {workers[0]}" + (f" (pid {pids[0]})" if len(pids) == 1 else
                                               f" ({len(pids)} processes)" if pids else "")
        return f"{len(workers)} workers: {describe_workers(workers, limit=10)}"
    if len(pids) == 1:
        return f"pid {pids[0]}"
    shown = ", ".join(str(p) for p in pids[:10]) + (" ..." if len(pids) > 10 else "")
    return f"{len(pids)} processes (pids {shown})"


def category_words(category: str) -> str:
    try:
        return Category(category).label
    except ValueError:
        return category.replace("_", " ")


def group_progress(report: HangReport, group: StackGroup) -> str:
    """``frozen``, ``moving`` or ``2 frozen, 1 unknown``; nothing for processes with no stack."""
    if group.category in (Category.UNKNOWN.value, Category.GONE.value):
        return ""
    by_key = {(p.worker, p.pid): p for p in report.processes}
    counts: dict[str, int] = {}
    for member in group.members:
        state = by_key.get(member)
        if state is not None:
            counts[state.progress] = counts.get(state.progress, 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))


def frame_line(frame: Frame) -> str:
    """As py-spy dump prints a frame."""
    return f"{frame.function} ({frame.where})"


def frame_lines(frames: Iterable[Frame], *, limit: int = MAX_FRAMES, code: bool = True) -> list[str]:
    """Frames innermost first, the source line under each (``--locals`` is never read)."""
    frames = [f for f in frames if not f.file.startswith("<frozen")]
    lines = []
    for frame in frames[:limit]:
        lines.append(frame_line(frame))
        if code and frame.code and not is_library(frame):
            lines.append(f"    {frame.code}")
    if len(frames) > limit:
        lines.append(f"... {len(frames) - limit} more frame(s)")
    return lines


def first_member_state(report: HangReport, group: StackGroup) -> ProcessState | None:
    by_key = {(p.worker, p.pid): p for p in report.processes}
    return next((by_key[m] for m in group.members if m in by_key), None)


def summary_line(report: HangReport) -> str:
    count = len([p for p in report.processes if p.pid or p.stack])  # a pasted dump may not name its pid
    if report.workers:
        silent = sum(1 for w in report.workers.values() if w.get("status") == "no_report")
        where = f" on {len(report.workers)} workers" + (f" ({silent} sent no report)" if silent else "")
    else:
        where = (" from stack dumps" if report.from_stack_dumps else
                 f" on {report.host}" if report.host else "")
    samples = f"{report.samples} sample(s)"
    if report.samples > 1 and report.interval_s <= 0:
        samples += " (the dumps carry no time of their own)"
    elif report.samples > 1:
        by_files = " by the files' times" if report.from_stack_dumps else ""
        samples += f" about {report.interval_s:.0f}s apart{by_files}" if by_files else f" {report.interval_s:g}s apart"
    return f"{count} process(es){where}, {samples}"
