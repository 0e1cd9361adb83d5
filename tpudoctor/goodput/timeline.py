"""Rebuild a job's timeline from its events: each start (and restart), the start-up before the first step,
the step intervals, saves and restores, failures, and the gap until the next start.

Streamed and bounded: each run keeps its step intervals and records in bounded storage
(``tpudoctor.goodput.run``), so a 1 GB log needs no more memory than a 100 MB one.

A run is one process lifetime of the job. A new run begins at a start line (``XPK Start``, JAX's
first system line, an elastic attempt) once the current run has stepped or ended, at a
start-up line after a failure or exit, or when the step number goes back after a failure or a long
silence. A step number that goes back without any of those is an out-of-order line (several workers
printing into one unlabelled log), counted and reported, not a restart.
"""

from __future__ import annotations

from collections.abc import Iterable

from tpudoctor.goodput.buckets import (
    DATA_LOADING_SYNC,
    PROGRAM_STARTUP,
    RESTORE,
    TPU_INITIALIZATION,
    TRAINING_PREP,
)
from tpudoctor.goodput.line_patterns import Kind
from tpudoctor.goodput.readers import Event
from tpudoctor.goodput.run import MAX_SAVES, Run, Span
from tpudoctor.goodput.saves import record_save, settle_save

DUPLICATE_WINDOW_S = 2.0
"""The same event printed twice (``INFO:tensorflow:`` and absl, one line per device) within this."""
RESTART_SILENCE_S = 60.0
RESTART_SILENCE_STEPS = 20.0

STARTUP_KINDS = (Kind.INIT_END, Kind.PREP_END, Kind.RESTORE_START, Kind.RESTORE_END, Kind.DATA_START,
                 Kind.DATA_END, Kind.COMPILE, Kind.SAVE_START, Kind.SAVE_END, Kind.SAVE_BLOCKING_END)
REOPENING_KINDS = (Kind.START, Kind.INIT_END, Kind.PREP_END, Kind.RESTORE_START)
"""After a failure or exit, these lines mean a new process is starting."""


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
        self._count(e)
        run = self._run_for(e)
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
            _restore_start(run, e)
        elif kind is Kind.RESTORE_END:
            _restore_end(run, e)
        elif kind is Kind.DATA_START:
            run.open_data = Span("data", e.t, e.where)
            run.mark(e.t, TRAINING_PREP, "data loading begins", e.where)
        elif kind is Kind.DATA_END:
            _data_end(run, e)
        elif kind is Kind.COMPILE:
            _compile(run, e)
        elif kind is Kind.CACHE_HIT:
            run.cache_hits += 1
        elif kind is Kind.CACHE_WRITE:
            run.cache_writes += 1
        elif kind in (Kind.SAVE_START, Kind.SAVE_BLOCKING_END, Kind.SAVE_END):
            record_save(run, e)
        elif kind is Kind.FAILURE:
            self._failure(run, e)
        elif kind is Kind.EXIT:
            _exit(run, e)

    def _count(self, e: Event) -> None:
        self.events += 1
        self.frameworks[e.framework] = self.frameworks.get(e.framework, 0) + 1
        if e.t is not None:
            if self.first_t is None:
                self.first_t = e.t
            if self.last_t is None or e.t > self.last_t:
                self.last_t = e.t

    def _run_for(self, e: Event) -> Run:
        """The run ``e`` belongs to: the current one, or a new one when ``e`` starts a process."""
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
        return run

    def _failure(self, run: Run, e: Event) -> None:
        run.add_failure(e)
        if e.mode == "new-session":  # TPUEstimator closes the session and makes a new one: a restart
            run.ended = True
            run.end_reason = "failure; the session was closed and a new one created"
            self.new_session = f"a new session after the error at {e.where}"
        elif run.stepped:
            run.ended = True
            run.end_reason = f"failure: {e.text[:160]}"

    def _step(self, run: Run, e: Event) -> None:
        if e.step is None:
            return
        self.steps += 1
        if run.stepped and e.step <= run.last_step:
            if e.step == run.last_step and not run.ended:
                return  # the same step printed again (another device, another logger)
            # since the last step line (run.last_t already holds this line's own time)
            silence = (e.t - run.last_step_t) if (e.t is not None and run.last_step_t is not None) else None
            median = _quick_median(run)
            long_silence = silence is not None and silence >= max(RESTART_SILENCE_S,
                                                                   RESTART_SILENCE_STEPS * (median or 0.0))
            no_clock = e.t is None and run.last_step_t is None  # nothing but the step itself says it went back
            if run.ended or long_silence or no_clock:
                self._close_run(self._last_time_before(e))
                why = (f"the step went back from {run.last_step} to {e.step}"
                       + ("" if run.ended or silence is None else f" after {silence:.0f} s of silence")
                       + " (no start line)")
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
            settle_save(run, run.open_save)  # training went on: the save's blocking part is over
        run.add_step(e)

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
            settle_save(run, run.open_save)
        if run.open_restore is not None:
            run.spans.append(run.open_restore)
            run.notes.append(f"a restore began at {run.open_restore.where} and no line says when it ended")
            run.open_restore = None
        run.close(end_t)
        self.run = None

    def _last_time_before(self, e: Event) -> float | None:
        run = self.run
        return run.last_t if run is not None else None


def _restore_start(run: Run, e: Event) -> None:
    if run.open_restore is not None and not run.stepped:  # the same restore said twice (MaxText, Orbax)
        run.mark(e.t, TRAINING_PREP, "restore begins", e.where)
        return
    if not run.stepped and run.restored_step is None:
        run.restored_step = e.step
    run.open_restore = Span("restore", e.t, e.where, step=e.step)
    run.mark(e.t, TRAINING_PREP, "restore begins", e.where)


def _restore_end(run: Run, e: Event) -> None:
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


def _data_end(run: Run, e: Event) -> None:
    span = run.open_data or Span("data", None, e.where)
    run.open_data = None
    if span.start_t is not None and e.t is not None:
        span.seconds, span.source = e.t - span.start_t, "measured"
    if len(run.spans) < MAX_SAVES:
        run.spans.append(span)
    run.mark(e.t, DATA_LOADING_SYNC, "data loaded", e.where)
    run.add_pending(DATA_LOADING_SYNC, span.seconds, span)


def _compile(run: Run, e: Event) -> None:
    span = Span("compile", e.t, e.where, seconds=e.seconds, source="reported" if e.seconds else None)
    if len(run.spans) < MAX_SAVES:
        run.spans.append(span)
    if e.seconds is not None and len(run.compile_seconds) < MAX_SAVES:
        run.compile_seconds.append(e.seconds)
    run.mark(e.t, PROGRAM_STARTUP, "compilation", e.where)
    run.add_pending(PROGRAM_STARTUP, e.seconds, span)


def _exit(run: Run, e: Event) -> None:
    if e.code is not None:
        run.exit_code = e.code
    run.ended = True
    if e.code is not None:
        run.end_reason = f"exit code {e.code}"
    elif run.end_reason == "the log ends" or not run.failures:
        run.end_reason = "the job's end line"


def _reason(e: Event) -> str:
    return f"start line: {e.text.strip()[:120]}"


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
