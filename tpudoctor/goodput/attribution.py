"""Charge one run's time to the badput buckets and to productive time (its start-up, its steady steps, its
tail after the last step), with the bands the timeline chart draws for it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tpudoctor.goodput.buckets import BUCKET_CODES, BUCKETS, OTHER, PROGRAM_STARTUP, SAVE, WASTED
from tpudoctor.goodput.run import Run

MAX_BANDS_PER_RUN = 120
CODE_BUCKETS = {code: name for name, code in BUCKET_CODES.items()}


@dataclasses.dataclass
class Figures:
    """Accumulates seconds per bucket and the pieces of the timeline to draw."""

    buckets: dict[str, float] = dataclasses.field(default_factory=lambda: {b: 0.0 for b in BUCKETS})
    productive: float = 0.0
    estimated: set[str] = dataclasses.field(default_factory=set)
    other_parts: dict[str, float] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)

    def add(self, bucket: str, seconds: float, *, estimated: bool = False, other_part: str | None = None) -> None:
        if seconds <= 0:
            return
        self.buckets[bucket] += seconds
        if estimated:
            self.estimated.add(bucket)
        if bucket == OTHER and other_part:
            self.other_parts[other_part] = self.other_parts.get(other_part, 0.0) + seconds


def attribute_startup(run: Run, median: float, figures: Figures, bands: list, origin: float) -> None:
    if run.first_step_t is None or run.start_t is None:
        return
    prev = run.start_t
    marks = sorted((m for m in run.marks if run.start_t <= m.t <= run.first_step_t), key=lambda m: m.t)
    for m in marks:
        if m.t > prev:
            figures.add(m.bucket, m.t - prev)
            bands.append(band(m.bucket, prev, m.t - prev, origin, m.label))
            prev = m.t
    last = run.first_step_t - prev
    first_steps = _typical_dn(run)
    if run.first_step_counted_from_start and run.first_step:
        first_steps = run.first_step  # the first line stands for every step since the start (compiled once)
    elif run.first_step is not None and not run.approx_steps and 0 <= run.first_step < first_steps:
        first_steps = max(run.first_step, 1)  # a log counting from 0 (step 0, 1, ...) has done that many steps
    productive_first = min(median * first_steps, max(last, 0.0))
    if not marks and run.first_step_seconds is not None and run.first_step_seconds <= last:
        unsplit = last - run.first_step_seconds
        figures.add(OTHER, unsplit, other_part="start-up the log does not split (no initialisation, restore or "
                                               "compile lines)")
        bands.append(band(OTHER, prev, unsplit, origin, "start-up, not split"))
        prev += unsplit
        last = run.first_step_seconds
        productive_first = min(median * first_steps, last)
    elif not marks:
        figures.add(OTHER, max(last - productive_first, 0.0),
                    other_part="start-up the log does not split (no initialisation, restore or compile lines)")
        bands.append(band(OTHER, prev, max(last - productive_first, 0.0), origin, "start-up, not split"))
        figures.productive += productive_first
        bands.append(band("PRODUCTIVE", run.first_step_t - productive_first, productive_first, origin, "first step"))
        return
    figures.add(PROGRAM_STARTUP, last - productive_first)
    bands.append(band(PROGRAM_STARTUP, prev, last - productive_first, origin, "compilation and first step"))
    figures.productive += productive_first
    bands.append(band("PRODUCTIVE", run.first_step_t - productive_first, productive_first, origin, "first step"))


def _typical_dn(run: Run) -> int:
    if not run.iv_dn:
        return 1
    values = sorted(run.iv_dn[:1000])
    return max(int(values[len(values) // 2]), 1)


def attribute_steady(run: Run, median: float, threshold: float, redo_from: int | None, figures: Figures,
            outliers: list, bands: list, origin: float, normal_s: float | None = None,
            charge_anomalous: bool = True, tick_s: float = 0.0) -> None:
    """``normal_s``: the mean time per step of the normal intervals; an anomalous interval's excess over it is
    badput (ml-goodput-measurement's extra time from anomalous steps). ``charge_anomalous`` False: the excess is
    listed as step-time deviation and stays productive (an MLPerf timed run, where every block is training).
    ``tick_s``: the clock's resolution; an interval is anomalous only if it is, one tick shorter (a whole-second
    clock reads 1.01 s as 2 s)."""
    if run.first_step_t is None or run.last_step_t is None:
        return
    productive = 0.0
    wasted = 0.0
    for dt, dn, end, known, unknown in run.intervals():
        expected = median * dn
        rest = max(dt - known, 0.0)
        excess = max(rest - expected, 0.0)
        if unknown >= 0:
            figures.add(CODE_BUCKETS[unknown], excess, estimated=True)
            rest -= excess
        elif dn > 0 and (rest - tick_s) / dn > threshold:
            excess = max(rest - (normal_s if normal_s is not None else median) * dn, 0.0)
            outliers.append({"step": end, "steps": dn, "seconds": _r(dt), "excess_s": _r(excess),
                             "run": run.index})
            if charge_anomalous:
                figures.add(OTHER, excess, other_part="step intervals far above the median, nothing in the log "
                                                      "says why")
                rest -= excess
        if redo_from is not None and end >= redo_from:
            wasted += rest
        else:
            productive += rest
    productive += run.folded_dt
    for bucket, seconds in run.steady_known.items():
        figures.add(bucket, seconds)
    if redo_from is not None and run.first_step is not None and run.first_step >= redo_from:
        # the first step's productive share was counted in attribute_startup: it was redone too
        first = min(median * _typical_dn(run), figures.productive)
        figures.productive -= first
        wasted += first
    figures.productive += productive
    figures.add(WASTED, wasted)
    span = run.last_step_t - run.first_step_t
    bands.append(band("PRODUCTIVE", run.first_step_t, span, origin,
                       f"steps {run.first_step} to {run.last_step}"))
    if wasted > 0 and redo_from is not None:
        t_redo, _exact = run.time_of_step(redo_from - 1)
        if t_redo is not None:
            bands.append(band(WASTED, t_redo, run.last_step_t - t_redo, origin,
                               f"steps {redo_from} to {run.last_step}, done again after the restart"))
    for s in run.saves:
        if s.region == "steady" and s.blocking_s and s.start_t is not None and len(bands) < MAX_BANDS_PER_RUN:
            bands.append(band(SAVE, s.start_t, s.blocking_s, origin, f"{s.mode or ''} save, step {s.step}".strip()))
    for o in outliers:
        if o["run"] == run.index and len(bands) < MAX_BANDS_PER_RUN:
            t, _ = run.time_of_step(o["step"])
            if t is not None:
                bands.append(band(OTHER, t - o["excess_s"], o["excess_s"], origin, f"slow step {o['step']}"))


def attribute_tail(run: Run, last: bool, figures: Figures, bands: list, origin: float) -> None:
    if run.end_t is None or run.last_step_t is None or run.end_t <= run.last_step_t:
        return
    tail = run.end_t - run.last_step_t
    known = 0.0
    for bucket, seconds, _record in run.pending:
        if seconds is not None:
            figures.add(bucket, min(seconds, tail - known))
            known += min(seconds, tail - known)
    rest = tail - known
    if last:
        figures.add(OTHER, rest, other_part="after the last step (final save, evaluation, shutdown)")
        bands.append(band(OTHER, run.last_step_t, tail, origin, "after the last step"))
    else:
        figures.add(WASTED, rest)
        bands.append(band(WASTED, run.last_step_t, tail, origin, "progress lost: after the last step line, "
                                                                  "before the failure"))


def band(bucket: str, start: float, seconds: float, origin: float, label: str) -> dict[str, Any]:
    return {"bucket": bucket, "start_s": _r(start - origin), "seconds": _r(max(seconds, 0.0)), "label": label}


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)
