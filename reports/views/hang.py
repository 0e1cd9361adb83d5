"""The hang report's view, read from the prepared document: the verdict and the root cause first (who, which
frame, who waits, since when), the decision with its commands, the processes grouped by where they stand (as
``py-spy dump`` prints stacks: "63 workers: ..." once, "worker 5: ..." apart), Megascale digests, the findings."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

from tpudoctor.findings import Status, describe_workers
from tpudoctor.hang.model import Frame, ThreadStack
from tpudoctor.hang.report import HangReport, ProcessState, StackGroup
from tpudoctor.hang.rule import Category, is_library
from tpudoctor.reports.view import MARKERS, Section, Suite, Table, View, findings_of, properties

MAX_FRAMES = 14
VERDICT_WORDS = {"hung": "HUNG", "progressing": "PROGRESSING", "unknown": "UNKNOWN", "no_process": "NO PROCESS"}
VERDICT_STATUS = {"hung": Status.FAIL, "progressing": Status.PASS, "unknown": Status.WARN, "no_process": Status.FAIL}

Member = tuple[str | None, int]


def members_words(members: Sequence[Member]) -> str:
    """``worker 5 (pid 1234)``, ``63 workers: 0-4, 6-63``, ``pid 6454``, ``3 processes (pids 1, 2, 3)``."""
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


def frame_lines(frames: Iterable[Frame], *, limit: int = MAX_FRAMES, code: bool = True) -> list[str]:
    """Frames innermost first as py-spy dump prints them, the source line under each (``--locals`` is never read)."""
    frames = [f for f in frames if not f.file.startswith("<frozen")]
    lines = []
    for frame in frames[:limit]:
        lines.append(f"{frame.function} ({frame.where})")
        if code and frame.code and not is_library(frame):
            lines.append(f"    {frame.code}")
    if len(frames) > limit:
        lines.append(f"... {len(frames) - limit} more frame(s)")
    return lines


def summary_line(report: HangReport) -> str:
    count = len([p for p in report.processes if p.pid or p.stack])  # a pasted dump may not name its pid
    if report.workers:
        silent = sum(1 for w in report.workers.values() if w.get("status") == "no_report")
        where = f" on {len(report.workers)} workers" + (f" ({silent} sent no report)" if silent else "")
    else:
        where = " from stack dumps" if report.from_stack_dumps else f" on {report.host}" if report.host else ""
    samples, interval = report.samples, report.interval_s
    said = f"{samples} sample(s)"
    if samples > 1 and interval <= 0:
        said += " (the dumps carry no time of their own)"
    elif samples > 1:
        said += f" about {interval:.0f}s apart by the files' times" if report.from_stack_dumps else f" {interval:g}s apart"
    return f"{count} process(es){where}, {said}"


def _verdict(doc: dict[str, Any]) -> Section:
    verdict, cause = doc["verdict"], doc.get("root_cause") or {}
    hung = bool(cause) and verdict == "hung"
    headline = cause["headline"] if hung else doc["verdict_why"]
    rate = f" at {doc['steps_per_s']:.2f} steps/s" if verdict == "progressing" and doc.get("steps_per_s") else ""
    notes = [f"{MARKERS[VERDICT_STATUS[verdict]]} {VERDICT_WORDS[verdict]}{rate} (confidence {doc['confidence']}): "
             f"{headline}"]
    if hung:
        if cause.get("stalled_since"):
            since = dt.datetime.fromisoformat(cause["stalled_since"])
            ago = max((dt.datetime.fromisoformat(doc["started_at"]) - since).total_seconds(), 0)
            notes.append(f"no step since {since.astimezone().strftime('%Y-%m-%d %H:%M:%S')} ({ago:.0f}s before this run)")
        if cause.get("detail") and cause["detail"] not in headline:
            notes.append(cause["detail"])
        notes.append(f"why hung: {doc['verdict_why']}")
    elif cause:
        notes.append(f"if it is stuck: {cause['headline']}")
    return Section(notes=tuple(notes), marked=True)


def _decision(doc: dict[str, Any]) -> Section | None:
    d = doc.get("decision")
    if not d:
        return None
    return Section(f"Decision: {d['action']} (confidence {d['confidence']})", notes=(d["why"], d["text"]),
                   commands=tuple(d["commands"]))


def _groups(report: HangReport) -> list[Section]:
    if not report.groups:
        return []
    states = {(p.worker, p.pid): p for p in report.processes}
    last_threads = {(c.worker, c.pid): c.samples[-1].threads for c in report.captures if c.samples}
    rows, sections = [], []
    for group in report.groups:
        state = next((states[m] for m in group.members if m in states), None)
        progress = _progress(group.progress_counts)
        frame = state.frame if state else None
        rows.append((members_words(group.members), category_words(group.category),
                     f"{frame.function} ({frame.where})" if frame else "", progress,
                     "odd one out" if group.odd_one_out else ""))
        sections += _group_sections(group, state, progress, last_threads.get(group.members[0]) or [])
    table = Table(("processes", "where", "frame", "progress", ""), tuple(rows),
                  marked_rows=frozenset(i for i, g in enumerate(report.groups) if g.odd_one_out))
    head = Section("Where the processes stand", notes=("training thread, innermost frame first; like py-spy dump",),
                   table=table)
    return [head, *sections]


def _progress(counts: dict[str, int]) -> str:
    """``frozen``, ``moving`` or ``2 frozen, 1 unknown``; nothing for processes with no stack."""
    return next(iter(counts)) if len(counts) == 1 else ", ".join(f"{n} {k}" for k, n in counts.items())


def _group_sections(group: StackGroup, state: ProcessState | None, progress: str,
                    threads: list[ThreadStack]) -> list[Section]:
    title = (f"{members_words(group.members)}: {category_words(group.category)}" + (f", {progress}" if progress else "")
             + (" (the odd one out)" if group.odd_one_out else ""))
    notes = [n for n in ((state.detail, state.progress_why) if state else ()) if n]
    if not group.stack:
        return [Section(title, notes=tuple(notes))]
    thread = next((t for t in threads if t.name == group.thread), None)
    status = ("active" if thread.active else "idle") if thread else "?"
    notes.append(f"Thread {str(thread.tid) + ' ' if thread else ''}({status}): {group.thread!r}")
    code = frame_lines(group.stack)
    others = [t for t in threads if t.name != group.thread and t.frames]
    shown: list[str] = []
    extra: list[str] = []
    for other in others:
        lines = [f"Thread {other.tid} ({'active' if other.active else 'idle'}): {other.name!r}",
                 *(f"  {line}" for line in frame_lines(other.frames, limit=6)),
                 *(f"  holds: {held}" for f in other.frames for held in f.holding)]
        important = group.odd_one_out and (other.active or any(f.holding for f in other.frames))
        (shown if important else extra).extend(lines)
    sections = [Section(title, notes=tuple(notes), code=tuple(code + shown), level=3)]
    native = state.native if state else []
    if native or extra:
        more = ([*("native frames under it:", *frame_lines(native, code=False, limit=8))] if native else []) + extra
        sections.append(Section(f"{members_words(group.members)}: more threads and native frames", code=tuple(more),
                                verbose_only=True, level=3))
    return sections


def _digests(doc: dict[str, Any]) -> Section | None:
    digests = doc.get("digests") or []
    if not digests:
        return None
    notes = []
    for d in digests[-5:]:
        hosts = f"; culprits {', '.join(d['culprit_hosts'])}" if d.get("culprit_hosts") else ""
        pcs = f"; program counters {d['program_counters']}" if d.get("program_counters") else ""
        notes.append(f"{d['kind']}: {d.get('cause') or d['headline'][:160]}{hosts}{pcs} ({d['source']}:{d['line_no']})")
    return Section("Megascale", notes=tuple(notes))


def view(doc: dict[str, Any]) -> View:
    findings, report = findings_of(doc), HangReport.from_dict(doc)
    target = doc.get("target") or {}
    version = (doc.get("tool") or {}).get("version", "")
    title = " · ".join([f"tpudoctor hang {version}"] + [f"{k} {target[k]}" for k in ("project", "zone", "tpu", "worker")
                                                        if target.get(k)])
    sections = [_verdict(doc), _decision(doc), *_groups(report), _digests(doc), Section("Findings", findings=findings)]
    decision = doc.get("decision") or {}
    suite = Suite("tpudoctor hang", "tpudoctor.hang", duration_s=float(doc.get("duration_s") or 0.0),
                  timestamp=doc["started_at"], hostname=doc.get("host") or "", properties=properties((
                      ("verdict", doc["verdict"]), ("confidence", doc["confidence"]),
                      ("decision", decision.get("action", "")), *target.items())))
    return View("hang", title, (summary_line(report),), tuple(sections), findings, suite)
