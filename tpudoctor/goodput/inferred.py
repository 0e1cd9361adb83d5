"""Structure inferred from the log itself, for logs no known form reads: the process's clock among every
clock on the lines (tpudoctor.logs.clocks), the step series by template mining (tpudoctor.logs.templates),
MLPerf's MLLOG timeline (mllog). The known forms are tried first; this reads a log they found no step in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tpudoctor.goodput.line_patterns import Kind
from tpudoctor.goodput.mllog import MARK, read_mllog
from tpudoctor.goodput.readers import Event
from tpudoctor.logs import clocks
from tpudoctor.logs.prefixes import clean, kubectl_worker, unwrapped
from tpudoctor.logs.templates import step_series

FRAMEWORK = "inferred"
MAX_LINES = 2_000_000
"""Logs longer than this are read by their known forms only (the inference keeps every line's message)."""


def infer(lines: Sequence[str], source: str, *, year: int | None = None) -> tuple[list[Event], dict[str, Any]] | None:
    """Events and what was inferred (``clock``, ``steps_from``, ``relative``, ``first_t``, ``last_t``, ``mllog``),
    or None when the log shows no step series."""
    if any(MARK in line for line in lines[:200]) or any(MARK in line for line in lines[-200:]):
        events, summary = read_mllog(lines, source)
        if not events:
            return None
        return events, {"clock": "MLPerf's time_ms (epoch milliseconds) on every :::MLLOG line",
                        "steps_from": f"MLPerf blocks: {summary['blocks']} block_stop lines",
                        "relative": False, "first_t": summary["first_t"], "last_t": summary["last_t"],
                        "mllog": {k: summary[k] for k in ("init_ms", "run_ms", "status", "blocks", "evals")}}
    if year is None:  # a glog/absl date has no year: the log's ISO dates give it
        year = next((int(m[1]) for line in lines[:1000] if (m := clocks.ISO.search(line))), None)
    messages, picked, workers, several = [], [], [], False
    start_from_counter: tuple[float, str] | None = None
    for line in lines:
        text = clean(line)
        worker, text = kubectl_worker(text)
        found = clocks.clocks_on(text, year=year)
        several = several or sum(c.absolute for c in found) > 1
        choice = clocks.pick(found)
        absolute = choice if choice is not None and choice.absolute else None
        relative = next((c for c in found if not c.absolute), None)
        if start_from_counter is None and absolute is not None and relative is not None:
            start_from_counter = (absolute.t - relative.t, text[:200])
        picked.append(absolute or relative)
        workers.append(worker)
        messages.append(clocks.GLOG.sub("<T>", clocks.ISO.sub("<T>", unwrapped(text))))
    series = step_series(messages)
    if series is None:
        return None
    has_absolute = any(c is not None and c.absolute for c in picked)
    kind = next((c.kind for c in picked if c is not None and (c.absolute or not has_absolute)), None)
    events: list[Event] = []
    if start_from_counter is not None:
        events.append(Event(Kind.START, start_from_counter[0], framework=FRAMEWORK, source=source, line_no=0,
                            text=f"the process's own counter of time since its start: {start_from_counter[1]}"))
    elif not has_absolute and kind == "relative":
        events.append(Event(Kind.START, 0.0, framework=FRAMEWORK, source=source, line_no=0,
                            text="the process's start (its relative clock's zero)"))
    for point in series.points:
        clock = picked[point.index]
        t = clock.t if clock is not None and (clock.absolute == has_absolute) else None
        events.append(Event(Kind.STEP, t, step=point.step, seconds=point.seconds, approx=point.approx,
                            worker=workers[point.index], framework=FRAMEWORK, source=source,
                            line_no=point.index + 1, text=lines[point.index].strip()[:300]))
    times = [c.t for c in picked if c is not None and c.absolute == has_absolute]
    if events and events[0].kind is Kind.START and events[0].t is not None:
        times.append(events[0].t)
    return events, {"clock": clocks.describe(kind, several) if kind else "no clock on any line",
                    "steps_from": series.why, "relative": kind == "relative" and not has_absolute,
                    "first_t": min(times) if times else None, "last_t": max(times) if times else None,
                    "mllog": None}
