"""One run of a job (one process lifetime), as the timeline builds it: its start-up marks, saves, spans
(restores, data waits, compilations) and failures, and its step intervals in bounded storage.

Per step interval a few numbers go into typed arrays up to ``MAX_INTERVALS``; past that, plain intervals
are folded into running sums and a fixed-size sample keeps the median honest. Marks, saves and failures
are capped lists.
"""

from __future__ import annotations

import array
import bisect
import collections
import dataclasses
import random
from collections.abc import Iterable
from typing import Any

from tpudoctor.goodput.buckets import BUCKET_CODES
from tpudoctor.goodput.readers import Event

MAX_INTERVALS = 200_000
"""Step intervals kept one by one per run (past that, plain ones are summed and sampled)."""
TAIL_INTERVALS = 50_000
"""Past MAX_INTERVALS, the latest intervals still kept one by one (steps redone after a restart are the latest)."""
SAMPLE_SIZE = 50_000
MAX_MARKS = 64
MAX_SAVES = 2000
MAX_FAILURES = 20
MAX_STEP_TIMES = 100_000
MAX_PENDING = 1000
CLOCK_JUMP_S = 1.0


@dataclasses.dataclass
class Mark:
    """A start-up milestone: the time before it (since the previous mark) belongs to ``bucket``."""

    t: float
    bucket: str
    label: str
    where: str


@dataclasses.dataclass
class Save:
    step: int | None
    mode: str | None
    start_t: float | None
    where: str
    blocking_s: float | None = None
    blocking_source: str | None = None
    """``reported`` (the line says), ``measured`` (start and end lines), ``estimated`` (excess of its
    step interval over the median step), or None."""
    total_s: float | None = None
    end_t: float | None = None
    region: str = "steady"
    """``startup`` (before the first step), ``steady`` or ``tail`` (after the last step)."""

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "mode": self.mode or "unknown", "blocking_s": _r(self.blocking_s),
                "blocking_source": self.blocking_source, "total_s": _r(self.total_s), "where": self.where,
                "start_t": self.start_t}


@dataclasses.dataclass
class Span:
    """A restore, a data wait or a compilation: when and how long, where known."""

    kind: str
    start_t: float | None
    where: str
    seconds: float | None = None
    source: str | None = None
    step: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "seconds": _r(self.seconds), "source": self.source, "where": self.where,
                "step": self.step}


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)


class Run:
    """One process lifetime: start-up, steady steps, tail."""

    def __init__(self, index: int, start_t: float | None, reason: str, where: str):
        self.index = index
        self.start_t = start_t
        self.start_reason = reason
        self.start_where = where
        self.end_t: float | None = None
        self.end_reason = "the log ends"
        self.exit_code: int | None = None
        self.ended = False
        self.failures: list[dict[str, Any]] = []
        self.marks: list[Mark] = []
        self.notes: list[str] = []
        self.first_step: int | None = None
        self.last_step: int | None = None
        self.first_step_t: float | None = None
        self.last_step_t: float | None = None
        self.first_step_seconds: float | None = None
        self.first_step_counted_from_start = False
        """The first step line's number is the steps done since this start (MLPerf's epoch counter)."""
        self.restored_step: int | None = None
        """The checkpoint step this start restored (from its restore line), if it says."""
        self.step_lines = 0
        self.approx_steps = False
        # steady state: one row per step interval
        self.iv_dt = array.array("d")
        self.iv_dn = array.array("l")
        self.iv_end = array.array("l")
        self.iv_known = array.array("d")     # badput with a known duration inside the interval
        self.iv_unknown = array.array("b")   # bucket code of an event of unknown duration inside (-1: none)
        self.tail: collections.deque = collections.deque(maxlen=TAIL_INTERVALS)
        self.folded_dt = 0.0                 # intervals between the first MAX_INTERVALS and the tail, summed
        self.folded_dn = 0
        self.sample: list[float] = []        # per-step seconds of folded intervals (reservoir)
        self.sample_seen = 0
        self.rng = random.Random(0)
        self.steady_known: dict[str, float] = {}
        self.reported_seconds_sum = 0.0
        self.reported_seconds_n = 0
        self.reported_per_step: array.array = array.array("d")
        self.untimed_intervals = 0
        self.clock_jumps: list[dict[str, Any]] = []
        self.step_n = array.array("l")
        self.step_t = array.array("d")
        self.step_stride = 1
        self.step_count_seen = 0
        self.saves: list[Save] = []
        self.saves_dropped = 0
        self.open_save: Save | None = None
        self.spans: list[Span] = []
        self.open_restore: Span | None = None
        self.open_data: Span | None = None
        self.pending: list[tuple[str, float | None, Save | Span | None]] = []
        """Events since the last step line: (bucket, known seconds, record) to settle on the next step."""
        self.cache_hits = 0
        self.cache_writes = 0
        self.compile_seconds: list[float] = []
        self.last_t: float | None = start_t
        self.out_of_order = 0

    # -------------------------------------------------------------- building
    @property
    def stepped(self) -> bool:
        return self.first_step is not None

    def mark(self, t: float | None, bucket: str, label: str, where: str) -> None:
        if t is not None and not self.stepped and len(self.marks) < MAX_MARKS:
            self.marks.append(Mark(t, bucket, label, where))

    def add_step(self, event: Event) -> None:
        self.step_lines += 1
        self.approx_steps = self.approx_steps or event.approx
        n, t = event.step, event.t
        if not self.stepped:
            self.first_step, self.last_step, self.first_step_t, self.last_step_t = n, n, t, t
            self.first_step_seconds = event.seconds
            self.first_step_counted_from_start = event.mode == "counted-from-start"
            if event.seconds is not None:
                self.reported_seconds_sum += event.seconds
                self.reported_seconds_n += 1
            self._record_step_time(n, t)
            self._settle_startup_pending()
            return
        dn = n - self.last_step
        dt = (t - self.last_step_t) if (t is not None and self.last_step_t is not None) else None
        if dt is not None and dt < -CLOCK_JUMP_S:
            self.clock_jumps.append({"at": event.where, "jump_s": round(dt, 3), "step": n})
            dt = None
        if event.seconds is not None:
            self.reported_seconds_sum += event.seconds
            self.reported_seconds_n += 1
            if len(self.reported_per_step) < MAX_INTERVALS:
                self.reported_per_step.append(event.seconds / max(dn, 1))
        known = 0.0
        unknown = -1
        for bucket, seconds, record in self.pending:
            if seconds is not None:
                known += seconds
                self.steady_known[bucket] = self.steady_known.get(bucket, 0.0) + seconds
            else:
                unknown = BUCKET_CODES[bucket]
                if isinstance(record, Save):
                    record.blocking_source = "estimated"
        self.pending = []
        if dt is None:
            self.untimed_intervals += 1
        elif len(self.iv_dt) < MAX_INTERVALS:
            self.iv_dt.append(max(dt, 0.0))
            self.iv_dn.append(dn)
            self.iv_end.append(n)
            self.iv_known.append(known)
            self.iv_unknown.append(unknown)
        else:  # past the first MAX_INTERVALS: keep the latest ones (where steps a restart redoes are), fold the rest
            if len(self.tail) == TAIL_INTERVALS:
                self._fold(*self.tail[0])
            self.tail.append((max(dt, 0.0), dn, n, known, unknown))
        self.last_step, self.last_step_t = n, (t if t is not None else self.last_step_t)
        self._record_step_time(n, t)

    def _fold(self, dt: float, dn: int, _end: int, known: float, unknown: int) -> None:
        """An interval from the middle of a long run: summed (productive less its known badput) and sampled."""
        self.folded_dt += max(dt - known, 0.0)
        self.folded_dn += dn
        if known or unknown >= 0:
            return
        self.sample_seen += 1
        value = dt / max(dn, 1)
        if len(self.sample) < SAMPLE_SIZE:
            self.sample.append(value)
        else:
            j = self.rng.randrange(self.sample_seen)
            if j < SAMPLE_SIZE:
                self.sample[j] = value

    def intervals(self) -> Iterable[tuple[float, int, int, float, int]]:
        """Every interval kept one by one: (seconds, steps, end step, known badput, unknown bucket code)."""
        yield from zip(self.iv_dt, self.iv_dn, self.iv_end, self.iv_known, self.iv_unknown, strict=True)
        yield from self.tail

    def _settle_startup_pending(self) -> None:
        """Events before the first step are start-up marks (``marks``), not parts of a step interval."""
        self.pending = []

    def _record_step_time(self, n: int, t: float | None) -> None:
        if t is None:
            return
        self.step_count_seen += 1
        if self.step_count_seen % self.step_stride:
            return
        self.step_n.append(n)
        self.step_t.append(t)
        if len(self.step_n) >= MAX_STEP_TIMES:  # keep every other one: bounded, still spans the run
            self.step_n = self.step_n[::2]
            self.step_t = self.step_t[::2]
            self.step_stride *= 2

    def time_of_step(self, n: int) -> tuple[float | None, bool]:
        """(time of step ``n``'s line, exact?) from the kept step times; interpolated between kept ones."""
        if not self.step_n:
            return None, False
        i = bisect.bisect_left(self.step_n, n)
        if i < len(self.step_n) and self.step_n[i] == n:
            return self.step_t[i], True
        if i == 0 or i == len(self.step_n):
            return None, False
        n0, n1, t0, t1 = self.step_n[i - 1], self.step_n[i], self.step_t[i - 1], self.step_t[i]
        return t0 + (t1 - t0) * (n - n0) / (n1 - n0), False

    def add_pending(self, bucket: str, seconds: float | None, record: Save | Span | None) -> None:
        if self.stepped:
            if len(self.pending) >= MAX_PENDING:  # thousands of events with no step between: fold them
                last_bucket, last_seconds, _ = self.pending[-1]
                if last_bucket == bucket and (last_seconds is None) == (seconds is None):
                    self.pending[-1] = (bucket, None if seconds is None else last_seconds + seconds, record)
                    return
            self.pending.append((bucket, seconds, record))
        elif seconds is not None and record is not None and isinstance(record, Save):
            record.region = "startup"

    def add_failure(self, event: Event) -> None:
        if len(self.failures) < MAX_FAILURES:
            self.failures.append({"where": event.where, "t": event.t, "text": event.text})

    def close(self, end_t: float | None) -> None:
        if end_t is not None and (self.end_t is None or end_t > self.end_t):
            self.end_t = end_t
        if self.end_t is None:
            self.end_t = self.last_t
