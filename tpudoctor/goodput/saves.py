"""Pair a checkpoint save's lines (its start, the end of its blocking part, its end) into one ``Save`` of
its run: frameworks say each part differently, and some say it twice (MaxText after Orbax).
"""

from __future__ import annotations

from tpudoctor.goodput.buckets import SAVE, TRAINING_PREP
from tpudoctor.goodput.line_patterns import Kind
from tpudoctor.goodput.readers import Event
from tpudoctor.goodput.run import MAX_SAVES, Run, Save


def record_save(run: Run, e: Event) -> None:
    """A save's start, blocking-end or end line, merged into the save it belongs to."""
    s = run.open_save
    if e.kind is Kind.SAVE_START:
        if s is not None and (s.step == e.step or e.step is None or s.step is None) and _near(s.start_t, e.t):
            s.mode = e.mode or s.mode
            s.step = s.step if s.step is not None else e.step
            return
        if s is not None:
            settle_save(run, s)
        last = run.saves[-1] if run.saves else None
        if last is not None and e.step is not None and last.step == e.step and _near(last.end_t, e.t, 30.0):
            last.mode = e.mode or last.mode  # MaxText's own line about the save Orbax already reported
            return
        s = Save(e.step, e.mode, e.t, e.where, region="steady" if run.stepped else "startup")
        run.open_save = s
        run.mark(e.t, TRAINING_PREP, "checkpoint save begins", e.where)
        return
    if s is None:  # an end line without its start line
        last = run.saves[-1] if run.saves else None
        if last is not None and (last.step == e.step or e.step is None) and _near(last.end_t, e.t, 30.0):
            if e.kind is Kind.SAVE_END and last.mode == "async" and e.seconds is not None:
                last.total_s = e.seconds
            return  # the same save's end said again (MaxText after Orbax)
        s = Save(e.step, e.mode, None, e.where, region="steady" if run.stepped else "startup")
        run.open_save = s
    s.mode = e.mode or s.mode
    if s.step is None:
        s.step = e.step
    if e.kind is Kind.SAVE_BLOCKING_END:
        if e.seconds is not None:
            s.blocking_s, s.blocking_source = e.seconds, "reported"
        if s.mode == "async":
            s.end_t = e.t
            settle_save(run, s)
        return
    # SAVE_END
    if s.mode == "async":
        s.total_s = e.seconds if e.seconds is not None else s.total_s
    else:
        if e.seconds is not None:
            s.total_s = e.seconds
            if s.blocking_s is None:
                s.blocking_s, s.blocking_source = e.seconds, "reported"
        elif s.start_t is not None and e.t is not None and s.blocking_s is None:
            s.blocking_s, s.blocking_source = e.t - s.start_t, "measured"
            s.total_s = s.blocking_s
    s.end_t = e.t
    settle_save(run, s)


def settle_save(run: Run, s: Save) -> None:
    """The save is over (its end line, or training went on): keep it and charge its blocking time."""
    run.open_save = None
    if len(run.saves) < MAX_SAVES:
        run.saves.append(s)
    else:
        run.saves_dropped += 1
    if s.region == "startup" or not run.stepped:
        s.region = "startup"
        run.mark(s.end_t, SAVE, "checkpoint saved", s.where)
        return
    run.add_pending(SAVE, s.blocking_s, s)


def _near(a: float | None, b: float | None, window: float = 3600.0) -> bool:
    return a is None or b is None or abs(b - a) <= window
