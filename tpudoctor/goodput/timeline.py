"""Rebuild a job's timeline from its events: each start (and restart), the start-up before the first step,
the step intervals, saves and restores, failures, and the gap until the next start.

Streamed and bounded: a run keeps running sums and, per step interval, a few numbers in typed arrays
up to ``MAX_INTERVALS`` (past that, plain intervals are folded into the sums and a fixed-size sample
keeps the median honest); start-up marks, saves and failures are capped lists. So a 1 GB log needs
no more memory than a 100 MB one.

A run is one process lifetime of the job. A new run begins at a start line (``XPK Start``, JAX's
first system line, an elastic attempt) once the current run has stepped or ended, at a
start-up line after a failure or exit, or when the step number goes back after a failure or a long
silence. A step number that goes back without any of those is an out-of-order line (several workers
printing into one unlabelled log), counted and reported, not a restart.
"""

from __future__ import annotations

import array
import bisect
import collections
import dataclasses
import random
from collections.abc import Iterable
from typing import Any

from tpudoctor.goodput.readers import Event, Kind

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
DUPLICATE_WINDOW_S = 2.0
"""The same event printed twice (``INFO:tensorflow:`` and absl, one line per device) within this."""
CLOCK_JUMP_S = 1.0
RESTART_SILENCE_S = 60.0
RESTART_SILENCE_STEPS = 20.0

# Buckets, in ml-goodput-measurement's names.
TPU_INITIALIZATION = "TPU_INITIALIZATION"
TRAINING_PREP = "TRAINING_PREP"
PROGRAM_STARTUP = "PROGRAM_STARTUP"
DATA_LOADING_SYNC = "DATA_LOADING_SYNC"
SAVE = "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"
RESTORE = "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME"
WASTED = "WASTED_PROGRESS_FROM_DISRUPTION"
RECOVERY = "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION"
OTHER = "OTHER"
BUCKETS = (TPU_INITIALIZATION, TRAINING_PREP, PROGRAM_STARTUP, DATA_LOADING_SYNC, SAVE, RESTORE, WASTED,
           RECOVERY, OTHER)
BUCKET_CODES = {name: i for i, name in enumerate(BUCKETS)}

STARTUP_KINDS = (Kind.INIT_END, Kind.PREP_END, Kind.RESTORE_START, Kind.RESTORE_END, Kind.DATA_START,
                 Kind.DATA_END, Kind.COMPILE, Kind.SAVE_START, Kind.SAVE_END, Kind.SAVE_BLOCKING_END)
REOPENING_KINDS = (Kind.START, Kind.INIT_END, Kind.PREP_END, Kind.RESTORE_START)
"""After a failure or exit, these lines mean a new process is starting."""


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


class Stream:
    """One worker's events, in order, folded into runs."""

    def __init__(self, worker: str | None, source: str):
        self.worker = worker
        self.source = source
        self.runs: list[Run] = []
        self.run: Run | None = None
        self.pending_event: Event | None = None
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.events = 0
        self.steps = 0
        self.out_of_order = 0
        self.frameworks: dict[str, int] = {}
        self.new_session: str | None = None
        """Set when the job said it will start a new session (TPUEstimator): the next event opens a run."""

    # ------------------------------------------------------------------ feed
    def feed(self, event: Event) -> None:
        """Events arrive one by one; a duplicate of the previous one (same kind and step, printed twice)
        is merged into it, taking its time where the first copy had none."""
        prev = self.pending_event
        if prev is not None and _duplicate(prev, event):
            if prev.t is None:
                prev.t = event.t
            if prev.seconds is None:
                prev.seconds = event.seconds
            return
        if prev is not None:
            self._process(prev)
        self.pending_event = event

    def finish(self, last_t: float | None) -> None:
        if self.pending_event is not None:
            self._process(self.pending_event)
            self.pending_event = None
        if last_t is not None and (self.last_t is None or last_t > self.last_t):
            self.last_t = last_t
        if self.run is not None:
            if self.new_session is not None:
                self.run.notes.append(f"the job said it would start a new session ({self.new_session}); the log "
                                      "ends before that session's first line")
            self._close_run(self.last_t)

    # ------------------------------------------------------------- machinery
    def _process(self, e: Event) -> None:
        if e.kind is Kind.NOTE:
            if self.run is None:  # Keras' "Epoch 1/3": the training loop began, even if no step ends
                self.frameworks[e.framework] = self.frameworks.get(e.framework, 0) + 1
                self._open(e.t, "the log begins", e.where)
            return
        self.events += 1
        self.frameworks[e.framework] = self.frameworks.get(e.framework, 0) + 1
        if e.t is not None:
            if self.first_t is None:
                self.first_t = e.t
            if self.last_t is None or e.t > self.last_t:
                self.last_t = e.t
        run = self.run
        if run is not None and self.new_session is not None and e.kind is not Kind.FAILURE:
            self._close_run(self._last_time_before(e))
            run = self._open(e.t, self.new_session, e.where)
            self.new_session = None
        if run is None:
            run = self._open(e.t, "the log begins" if e.kind is not Kind.START else _reason(e), e.where)
        elif e.kind in REOPENING_KINDS and (run.ended or (e.kind is Kind.START and run.stepped)):
            self._close_run(self._last_time_before(e))
            run = self._open(e.t, _reason(e), e.where)
        if e.t is not None:
            run.last_t = e.t if run.last_t is None or e.t > run.last_t else run.last_t
            if run.start_t is None:
                run.start_t = e.t
        kind = e.kind
        if kind is Kind.STEP:
            self._step(run, e)
        elif kind is Kind.START:
            pass  # a second start line of the same start-up (XPK's, then JAX's)
        elif kind is Kind.INIT_END:
            if e.seconds is not None and e.t is not None and run.start_t is not None and not run.marks:
                run.mark(e.t - e.seconds, TRAINING_PREP, "before TPU initialisation", e.where)
            run.mark(e.t, TPU_INITIALIZATION, "TPU initialised", e.where)
        elif kind is Kind.PREP_END:
            run.mark(e.t, TRAINING_PREP, "training preparation", e.where)
        elif kind is Kind.RESTORE_START:
            if run.open_restore is not None and not run.stepped:  # the same restore said twice (MaxText, Orbax)
                run.mark(e.t, TRAINING_PREP, "restore begins", e.where)
                return
            if not run.stepped and run.restored_step is None:
                run.restored_step = e.step
            run.open_restore = Span("restore", e.t, e.where, step=e.step)
            run.mark(e.t, TRAINING_PREP, "restore begins", e.where)
        elif kind is Kind.RESTORE_END:
            span = run.open_restore or Span("restore", None, e.where, step=e.step)
            run.open_restore = None
            span.step = span.step if span.step is not None else e.step
            if not run.stepped and run.restored_step is None:
                run.restored_step = e.step
            if e.seconds is not None:
                span.seconds, span.source = e.seconds, "reported"
            elif span.start_t is not None and e.t is not None:
                span.seconds, span.source = e.t - span.start_t, "measured"
            run.spans.append(span)
            if span.seconds is not None and e.t is not None and not any(m.label == "restore begins" for m in run.marks):
                run.mark(e.t - span.seconds, TRAINING_PREP, "restore begins", e.where)
            run.mark(e.t, RESTORE, "checkpoint restored", e.where)
            run.add_pending(RESTORE, span.seconds, span)
        elif kind is Kind.DATA_START:
            run.open_data = Span("data", e.t, e.where)
            run.mark(e.t, TRAINING_PREP, "data loading begins", e.where)
        elif kind is Kind.DATA_END:
            span = run.open_data or Span("data", None, e.where)
            run.open_data = None
            if span.start_t is not None and e.t is not None:
                span.seconds, span.source = e.t - span.start_t, "measured"
            if len(run.spans) < MAX_SAVES:
                run.spans.append(span)
            run.mark(e.t, DATA_LOADING_SYNC, "data loaded", e.where)
            run.add_pending(DATA_LOADING_SYNC, span.seconds, span)
        elif kind is Kind.COMPILE:
            span = Span("compile", e.t, e.where, seconds=e.seconds, source="reported" if e.seconds else None)
            if len(run.spans) < MAX_SAVES:
                run.spans.append(span)
            if e.seconds is not None and len(run.compile_seconds) < MAX_SAVES:
                run.compile_seconds.append(e.seconds)
            run.mark(e.t, PROGRAM_STARTUP, "compilation", e.where)
            run.add_pending(PROGRAM_STARTUP, e.seconds, span)
        elif kind is Kind.CACHE_HIT:
            run.cache_hits += 1
        elif kind is Kind.CACHE_WRITE:
            run.cache_writes += 1
        elif kind in (Kind.SAVE_START, Kind.SAVE_BLOCKING_END, Kind.SAVE_END):
            self._save(run, e)
        elif kind is Kind.FAILURE:
            run.add_failure(e)
            if e.mode == "new-session":  # TPUEstimator closes the session and makes a new one: a restart
                run.ended = True
                run.end_reason = "failure; the session was closed and a new one created"
                self.new_session = f"a new session after the error at {e.where}"
            elif run.stepped:
                run.ended = True
                run.end_reason = f"failure: {e.text[:160]}"
        elif kind is Kind.EXIT:
            if e.code is not None:
                run.exit_code = e.code
            run.ended = True
            if e.code is not None:
                run.end_reason = f"exit code {e.code}"
            elif run.end_reason == "the log ends" or not run.failures:
                run.end_reason = "the job's end line"

    def _step(self, run: Run, e: Event) -> None:
        if e.step is None:
            return
        self.steps += 1
        if run.stepped and e.step <= run.last_step:
            if e.step == run.last_step and not run.ended:
                return  # the same step printed again (another device, another logger)
            silence = (e.t - run.last_t) if (e.t is not None and run.last_t is not None) else None
            median = _quick_median(run)
            long_silence = silence is not None and silence >= max(RESTART_SILENCE_S,
                                                                   RESTART_SILENCE_STEPS * (median or 0.0))
            if run.ended or long_silence:
                self._close_run(self._last_time_before(e))
                why = (f"the step went back from {run.last_step} to {e.step}"
                       + ("" if run.ended else f" after {silence:.0f} s of silence") + " (no start line)")
                run = self._open(e.t, why, e.where)
                run.notes.append("this start has no start line: its start-up is counted from its first step")
            else:
                run.out_of_order += 1
                self.out_of_order += 1
                return
        elif run.ended and run.stepped:
            run.ended = False  # the failure did not stop the job: it went on stepping
            run.end_reason = "the log ends"
        if run.open_save is not None and run.stepped:
            self._settle_save(run, run.open_save)  # training went on: the save's blocking part is over
        run.add_step(e)

    def _save(self, run: Run, e: Event) -> None:
        s = run.open_save
        if e.kind is Kind.SAVE_START:
            if s is not None and (s.step == e.step or e.step is None or s.step is None) and _near(s.start_t, e.t):
                s.mode = e.mode or s.mode
                s.step = s.step if s.step is not None else e.step
                return
            if s is not None:
                self._settle_save(run, s)
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
                self._settle_save(run, s)
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
        self._settle_save(run, s)

    def _settle_save(self, run: Run, s: Save) -> None:
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

    def _open(self, t: float | None, reason: str, where: str) -> Run:
        run = Run(len(self.runs), t, reason, where)
        self.runs.append(run)
        self.run = run
        return run

    def _close_run(self, end_t: float | None) -> None:
        run = self.run
        if run is None:
            return
        if run.open_save is not None:
            self._settle_save(run, run.open_save)
        if run.open_restore is not None:
            run.spans.append(run.open_restore)
            run.notes.append(f"a restore began at {run.open_restore.where} and no line says when it ended")
            run.open_restore = None
        run.close(end_t)
        self.run = None

    def _last_time_before(self, e: Event) -> float | None:
        run = self.run
        return run.last_t if run is not None else None


def _reason(e: Event) -> str:
    return f"start line: {e.text.strip()[:120]}"


def _near(a: float | None, b: float | None, window: float = 3600.0) -> bool:
    return a is None or b is None or abs(b - a) <= window


def _duplicate(a: Event, b: Event) -> bool:
    if a.kind is not b.kind or a.step != b.step or a.kind is Kind.FAILURE or a.worker != b.worker:
        return False
    if a.kind is Kind.STEP and a.framework == "hf-trainer":
        return False
    if a.t is None or b.t is None:
        return a.text.split("]")[-1].strip()[-60:] == b.text.split("]")[-1].strip()[-60:] or a.kind is Kind.STEP
    return abs(b.t - a.t) <= DUPLICATE_WINDOW_S


def _quick_median(run: Run) -> float | None:
    if not run.iv_dt:
        return None
    tail = [(dt, dn) for dt, dn, *_ in list(run.tail)[-64:]] or list(zip(run.iv_dt[-64:], run.iv_dn[-64:],
                                                                         strict=True))
    values = sorted(dt / max(dn, 1) for dt, dn in tail)
    return values[len(values) // 2]


class Timeline:
    """Feed events from any number of sources; streams are kept per worker (or per source when lines
    carry no worker)."""

    def __init__(self) -> None:
        self.streams: dict[tuple[str, str | None], Stream] = {}

    def feed(self, events: Iterable[Event], source: str) -> None:
        for e in events:
            key = (source if e.worker is None else "*", e.worker)
            stream = self.streams.get(key)
            if stream is None:
                stream = self.streams[key] = Stream(e.worker, source)
            stream.feed(e)

    def finish(self, last_t_by_source: dict[str, float | None] | None = None) -> None:
        for (source, worker), stream in self.streams.items():
            key = source if worker is None else f"*{worker}"
            stream.finish((last_t_by_source or {}).get(key))

    def primary(self) -> Stream | None:
        """The stream the account is made from: the one with the most step lines (then the lowest worker)."""
        if not self.streams:
            return None
        return max(self.streams.values(), key=lambda s: (s.steps, -_worker_rank(s.worker), s.events))


def _worker_rank(worker: str | None) -> float:
    if worker is None:
        return -1.0
    digits = "".join(ch for ch in worker if ch.isdigit())
    return float(digits[-6:]) if digits else 0.0
