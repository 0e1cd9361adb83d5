"""Is a process moving? Its logs' step counters, and its stacks between two samples.

Progress lines are read with the one step-line grammar (``tpudoctor/logs/step_forms.toml``: MaxText,
TPUEstimator, TF2, torch_xla, Levanter, HF Trainer (epochs only), tqdm bars and a plain ``step N``), and
their times with the one clock (``tpudoctor.logs.clock``: zone-less times in ``--tz``, UTC by default).
Only the tail of a log is read (a hang is about its last lines).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import statistics
from collections.abc import Iterable

from tpudoctor.hang.model import StepReading
from tpudoctor.logs import steps
from tpudoctor.logs.clock import UTC, Clock, Zone
from tpudoctor.logs.prefixes import clean, kubectl_worker

TAIL_BYTES = 512 * 1024
RECENT_STEPS = 50


@dataclasses.dataclass(frozen=True)
class StepLine:
    step: float
    format: str
    seconds: float | None
    """The step's own duration where the line says it (MaxText ``seconds:``)."""


def parse_step_line(line: str) -> StepLine | None:
    """The progress a line reports (the grammar's step, else HF Trainer's epoch fraction), or None."""
    match = steps.match_step(kubectl_worker(clean(line))[1])
    if match is None or match.progress is None:
        return None
    return StepLine(step=match.progress, format=match.framework, seconds=match.seconds)


def line_time(line: str, now: _dt.datetime, tz: Zone = UTC) -> _dt.datetime | None:
    """A line's own time stamp as UTC, read by the one clock (a glog line's year: ``now``'s, or the year
    before when that would put it more than a day after ``now``)."""
    clock = Clock(tz=tz, now=now.timestamp())
    t = clock.read(kubectl_worker(clean(line))[1])
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc) if t is not None else None


def tail_lines(path: str, max_bytes: int = TAIL_BYTES) -> list[str]:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - max_bytes))
        data = handle.read()
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[1:] if size > max_bytes else lines  # the first one is cut


def read_steps(path: str, *, now: _dt.datetime | None = None, tz: Zone = UTC) -> StepReading:
    """The last progress line of a log file (None fields when it has none or cannot be read)."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    try:
        lines = tail_lines(path)
        mtime = _dt.datetime.fromtimestamp(os.stat(path).st_mtime, _dt.timezone.utc)
    except OSError:
        return StepReading(source=path, step=None, line=None, logged_at=None, read_at=now)
    return reading_from_lines(path, lines, now=now, fallback_time=mtime, tz=tz)


def reading_from_lines(source: str, lines: Iterable[str], *, now: _dt.datetime,
                       fallback_time: _dt.datetime | None = None, tz: Zone = UTC) -> StepReading:
    found: list[tuple[str, StepLine]] = []
    for line in reversed(list(lines)):
        parsed = parse_step_line(line)
        if parsed is None:
            continue
        if found and parsed.format != found[0][1].format:
            continue
        found.append((line, parsed))
        if len(found) >= RECENT_STEPS:
            break
    if not found:
        return StepReading(source=source, step=None, line=None, logged_at=None, read_at=now)
    from tpudoctor.redact import scrub_secrets

    last_line, last = found[0]
    return StepReading(source=source, step=last.step, line=scrub_secrets(last_line.strip()[:500]),
                       logged_at=line_time(last_line, now, tz) or fallback_time, read_at=now,
                       seconds_per_step=_seconds_per_step(found, now, tz), format=last.format)


def _seconds_per_step(found: list[tuple[str, StepLine]], now: _dt.datetime, tz: Zone = UTC) -> float | None:
    """The median step time of the recent lines: their own ``seconds:`` where given, else time stamps."""
    own = [s.seconds for _line, s in found if s.seconds is not None]
    if len(own) >= 2:
        return round(statistics.median(own), 6)
    stamped = [(line_time(line, now, tz), s.step) for line, s in found]
    stamped = [(t, step) for t, step in stamped if t is not None]
    rates = []
    for (t1, s1), (t0, s0) in zip(stamped, stamped[1:], strict=False):  # newest first
        if s1 > s0:
            rates.append((t1 - t0).total_seconds() / (s1 - s0))
    return round(statistics.median(rates), 6) if rates else None


@dataclasses.dataclass(frozen=True)
class LogVerdict:
    """What a process's logs say between the first and the last reading."""

    moved: bool | None
    """True: the step counter went up; False: it did not; None: no progress line to read."""
    steps_per_s: float | None
    last_step: float | None
    last_logged_at: _dt.datetime | None
    seconds_per_step: float | None
    source: str | None
    line: str | None


def log_verdict(first: list[StepReading], last: list[StepReading]) -> LogVerdict:
    """Per source, the counter at the first and the last reading; the source that moved most decides."""
    before = {r.source: r for r in first}
    best: LogVerdict | None = None
    for after in last:
        start = before.get(after.source)
        if after.step is None:
            continue
        moved = start is not None and start.step is not None and after.step > start.step
        rate = None
        if moved:
            elapsed = (after.read_at - start.read_at).total_seconds()
            rate = (after.step - start.step) / elapsed if elapsed > 0 else None
        verdict = LogVerdict(moved=moved, steps_per_s=rate, last_step=after.step, last_logged_at=after.logged_at,
                             seconds_per_step=after.seconds_per_step, source=after.source, line=after.line)
        if best is None or (verdict.moved and not best.moved):
            best = verdict
    return best or LogVerdict(None, None, None, None, None, None, None)
