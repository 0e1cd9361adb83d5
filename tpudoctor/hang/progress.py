"""Is a process moving? Its logs' step counters, and its stacks between two samples.

Progress lines in the shapes training code prints them (one pattern each, first match wins):
MaxText ``completed step: 8, seconds: 14.265, ...``, TPUEstimator ``loss = 0.2, step = 1023436``,
TF2 custom loops ``Train Step: 59/90``, torch_xla ``| Training Device=xla:0/3 Epoch=1 Step=320``,
tqdm bars ``1200/10000 [01:02<...``, HF Trainer ``{'loss': 2.1, ..., 'epoch': 0.62}`` (epochs only) and a
plain ``step N``. Only the tail of a log is read (a hang is about its last lines).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import re
import statistics
from collections.abc import Iterable

from tpudoctor.hang.model import StepReading

TAIL_BYTES = 512 * 1024
RECENT_STEPS = 50
STEP_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("maxtext", re.compile(r"completed step: (\d+)(?:, seconds: ([0-9.]+))?")),
    ("tpu-estimator", re.compile(r"\bloss = [^,]+, step = (\d+)")),
    ("tf2-custom-loop", re.compile(r"\bTrain Step: (\d+)/\d+")),
    ("torch-xla", re.compile(r"\| Training Device=\S+ Epoch=\d+ Step=(\d+)")),
    ("tqdm", re.compile(r"\b(\d+)/\d+ \[\d+:\d\d")),
    ("hf-trainer", re.compile(r"\{'loss': [^}]*'epoch': ([0-9.]+)")),
    ("step", re.compile(r"\b[Ss]tep[:= ]+(\d+)\b")),
)
NOT_PROGRESS = re.compile(r"checkpoint|restor|saving|loading", re.IGNORECASE)
_GLOG_TIME = re.compile(r"^[IWEF](\d\d)(\d\d)\s+(\d\d):(\d\d):(\d\d)(?:\.(\d+))?\s")
_ISO_TIME = re.compile(r"^\[?(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,](\d+))?(Z|[+-]\d\d:?\d\d)?")


@dataclasses.dataclass(frozen=True)
class StepLine:
    step: float
    format: str
    seconds: float | None
    """The step's own duration where the line says it (MaxText ``seconds:``)."""


def parse_step_line(line: str) -> StepLine | None:
    for name, pattern in STEP_FORMATS:
        match = pattern.search(line)
        if match is None:
            continue
        if name == "step" and NOT_PROGRESS.search(line):
            return None
        seconds = float(match.group(2)) if name == "maxtext" and match.group(2) else None
        return StepLine(step=float(match.group(1)), format=name, seconds=seconds)
    return None


def line_time(line: str, now: _dt.datetime) -> _dt.datetime | None:
    """A line's own time stamp as UTC: glog/absl ``I1130 10:00:00.123456`` (local time, no year: this year,
    or last year when that would be in the future) or ISO 8601 (local time unless it says its zone)."""
    if match := _GLOG_TIME.match(line):
        month, day, hour, minute, second, frac = match.groups()
        local_now = now.astimezone()
        try:
            stamp = local_now.replace(month=int(month), day=int(day), hour=int(hour), minute=int(minute),
                                      second=int(second), microsecond=int((frac or "0")[:6].ljust(6, "0")))
        except ValueError:
            return None
        if stamp - local_now > _dt.timedelta(days=1):
            stamp = stamp.replace(year=stamp.year - 1)
        return stamp.astimezone(_dt.timezone.utc)
    if match := _ISO_TIME.match(line):
        day, clock, frac, zone = match.groups()
        text = f"{day}T{clock}" + (f".{frac[:6]}" if frac else "")
        if zone:
            text += "+00:00" if zone == "Z" else zone
        try:
            stamp = _dt.datetime.fromisoformat(text)
        except ValueError:
            return None
        return (stamp if stamp.tzinfo else stamp.astimezone()).astimezone(_dt.timezone.utc)
    return None


def tail_lines(path: str, max_bytes: int = TAIL_BYTES) -> list[str]:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - max_bytes))
        data = handle.read()
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[1:] if size > max_bytes else lines  # the first one is cut


def read_steps(path: str, *, now: _dt.datetime | None = None) -> StepReading:
    """The last progress line of a log file (None fields when it has none or cannot be read)."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    try:
        lines = tail_lines(path)
        mtime = _dt.datetime.fromtimestamp(os.stat(path).st_mtime, _dt.timezone.utc)
    except OSError:
        return StepReading(source=path, step=None, line=None, logged_at=None, read_at=now)
    return reading_from_lines(path, lines, now=now, fallback_time=mtime)


def reading_from_lines(source: str, lines: Iterable[str], *, now: _dt.datetime,
                       fallback_time: _dt.datetime | None = None) -> StepReading:
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
                       logged_at=line_time(last_line, now) or fallback_time, read_at=now,
                       seconds_per_step=_seconds_per_step(found, now), format=last.format)


def _seconds_per_step(found: list[tuple[str, StepLine]], now: _dt.datetime) -> float | None:
    """The median step time of the recent lines: their own ``seconds:`` where given, else time stamps."""
    own = [s.seconds for _line, s in found if s.seconds is not None]
    if len(own) >= 2:
        return round(statistics.median(own), 6)
    stamped = [(line_time(line, now), s.step) for line, s in found]
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
