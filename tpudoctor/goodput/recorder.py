"""The account of a job from ml-goodput-measurement's own entries, by that library's definitions.

The recorder writes one small JSON payload per call (``job_start_time``, ``step_count`` with
``step_start_time``, ``tpu_init_*``, ``training_prep_*``, ``data_loading_*``, ``custom_badput_event_*``,
``job_end_time``: POSIX seconds) and Orbax's checkpoint logger one per save or restore. Its calculator
(``GoodputCalculator.get_job_goodput``, 0.2.x) is the authority on what those entries mean, so this module
follows its rules rather than the log reader's (``account.py``), and ``tests/goodput/test_goodput_oracle.py``
checks the two side by side on entries the library's own recorder wrote:

- wall time runs from the first job start to the last job end (to the read time while no end is recorded);
- a restart is a step number recorded again; each stretch of steps between restarts is a segment, and a
  step interval counts when the next step number follows it; the first interval's excess over the mean of
  the others is PROGRAM_STARTUP; intervals after the step the job resumed from are
  WASTED_PROGRESS_FROM_DISRUPTION, and the next job start less the start of the last step recorded before
  the failure is INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION;
- the last step counts as productive only when the job recorded its end (to the end);
- TPU_INITIALIZATION, TRAINING_PREP are their recorded intervals; only the first data loading after each
  start is DATA_LOADING_SYNC (later ones are DATA_LOADING_ASYNC, not badput);
- checkpoint save and restore are the checkpoint manager's durations averaged per step over the workers that
  logged it (local and persistent apart); saves come out of productive time, restores do not;
- custom badput events inside a step interval come out of that interval's productive time;
- a bucket below zero or above the wall time is set to 0 (the library's sanitising), and OTHER is the
  wall time left after productive time and every bucket, never below 0 (so the parts can add up to more
  than the wall time when buckets overlap, as a restore inside training preparation does).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tpudoctor.goodput.buckets import (
    BUCKETS,
    DATA_LOADING_SYNC,
    OTHER,
    PROGRAM_STARTUP,
    RECOVERY,
    RESTORE,
    SAVE,
    TPU_INITIALIZATION,
    TRAINING_PREP,
    WASTED,
)

JOB_START, JOB_END, STEP_START, STEP_COUNT = "job_start_time", "job_end_time", "step_start_time", "step_count"
TPU_INIT = ("tpu_init_start_time", "tpu_init_end_time")
PREP = ("training_prep_start_time", "training_prep_end_time")
DATA = ("data_loading_start_time", "data_loading_end_time")
CUSTOM_TYPE, CUSTOM_START, CUSTOM_END = ("custom_badput_event_type", "custom_badput_event_start_time",
                                         "custom_badput_event_end_time")
CKPT_SAVE_S, CKPT_RESTORE_S = "checkpoint_manager_blocking_duration_secs", "checkpoint_manager_duration_secs"


@dataclasses.dataclass
class _Segment:
    productive: float = 0.0
    startup: float = 0.0
    wasted: float = 0.0
    custom: dict[str, float] = dataclasses.field(default_factory=dict)
    max_productive_step: int = 0


def _custom_intervals(payloads: list[dict[str, Any]]) -> list[tuple[float, float, str]]:
    out, open_ = [], {}
    for p in payloads:
        if CUSTOM_START in p:
            open_[str(p.get(CUSTOM_TYPE, "unknown")).upper()] = float(p[CUSTOM_START])
        elif CUSTOM_END in p:
            kind = str(p.get(CUSTOM_TYPE, "unknown")).upper()
            if kind in open_:
                start, end = open_.pop(kind), float(p[CUSTOM_END])
                if start < end:
                    out.append((start, end, kind))
    return out


def _segment(steps: dict[int, float], resumed_at: int, custom: list[tuple[float, float, str]]) -> _Segment:
    """One stretch of steps; ``resumed_at`` is the step the next start resumed from (the last step at the end)."""
    seg = _Segment()
    if resumed_at == 0:  # the library counts nothing for a segment that resumed at step 0
        return seg
    items = list(steps.items())
    first_step = min(steps)
    first_time, others = 0.0, []
    for (prev_n, prev_t), (n, t) in zip(items, items[1:], strict=False):
        if n > resumed_at:
            seg.wasted += t - prev_t  # done again after the restart
            continue
        if n - 1 != prev_n:
            continue
        inside = 0.0
        for start, end, kind in custom:
            if prev_t <= start and end <= t:
                inside += end - start
                seg.custom[kind] = seg.custom.get(kind, 0.0) + end - start
        delta = max(0.0, t - prev_t - inside)
        seg.productive += delta
        if prev_n == first_step:
            first_time = delta
        else:
            others.append(delta)
        seg.max_productive_step = prev_n
    if others:
        mean = (seg.productive - first_time) / len(others)
        seg.startup = max(0.0, first_time - mean)
        seg.productive -= seg.startup
    return seg


def _checkpoint_seconds(payloads: list[dict[str, Any]], event_types: tuple[str, ...], key: str) -> float:
    """The checkpoint manager's time, averaged per (step, local or persistent) over the workers that logged it."""
    per_step: dict[str, list[float]] = {}
    for p in payloads:
        if p.get("event_type") not in event_types or p.get(key) is None:
            continue
        where = "persistent" if str(p.get("directory") or "").startswith("gs://") else "local"
        per_step.setdefault(f"{p.get('step')}-{where}", []).append(float(p[key]))
    return sum(sum(v) / len(v) for v in per_step.values())


class _Replay:
    """The recorder's payloads replayed in order: the buckets, productive time and steps they give, start by
    start (a step recorded again is a restart from it)."""

    def __init__(self, intervals: list) -> None:
        self.intervals = intervals
        self.buckets = {b: 0.0 for b in BUCKETS}
        self.custom: dict[str, float] = {}
        self.productive = 0.0
        self.steps: dict[int, float] = {}
        self.all_steps: set[int] = set()
        self.restarts = self.repeated = 0
        self.job_start: float | None = None
        self.job_end: float | None = None
        self.first_start: float | None = None
        self.tpu_open: float | None = None
        self.prep_open: float | None = None
        self.data_open: float | None = None
        self.sync_data, self.last_data, self.data_total = True, None, 0.0

    def add_segment(self, seg: _Segment) -> None:
        self.buckets[PROGRAM_STARTUP] += seg.startup
        self.buckets[WASTED] += seg.wasted
        for kind, seconds in seg.custom.items():
            self.custom[kind] = self.custom.get(kind, 0.0) + seconds

    def feed(self, p: dict[str, Any]) -> None:
        if JOB_START in p:
            self.job_start = float(p[JOB_START])
            self.first_start = self.job_start if self.first_start is None else self.first_start
        if STEP_START in p and STEP_COUNT in p:
            self._step(int(p[STEP_COUNT]), float(p[STEP_START]))
        if JOB_END in p:
            self.job_end = float(p[JOB_END])
        self._phase(p)

    def _step(self, n: int, t: float) -> None:
        self.all_steps.add(n)
        if n not in self.steps:
            self.steps[n] = t
            return
        # the job restarted from step n: steps up to n - 1 were kept by a checkpoint
        steps = self.steps
        self.restarts += 1
        self.repeated += max(sum(1 for k in steps if k >= n) - 1, 0)
        disrupted_at = steps[list(steps)[-1]]
        seg = _segment(steps, n, self.intervals)
        self.productive += seg.productive
        self.add_segment(seg)
        self.sync_data = True
        if self.last_data is not None:  # the data loading just before the restarted step blocked it
            self.buckets[DATA_LOADING_SYNC] += self.last_data
            self.last_data = None
        if self.job_start is not None and self.job_start > disrupted_at:
            self.buckets[RECOVERY] += self.job_start - disrupted_at
        self.steps = {n: t}

    def _phase(self, p: dict[str, Any]) -> None:
        """A start or end of TPU initialisation, training preparation or data loading."""
        buckets = self.buckets
        if TPU_INIT[0] in p:
            self.tpu_open = float(p[TPU_INIT[0]])
        elif TPU_INIT[1] in p and self.tpu_open is not None:
            buckets[TPU_INITIALIZATION] += float(p[TPU_INIT[1]]) - self.tpu_open
            self.tpu_open = None
        elif PREP[0] in p:
            self.prep_open = float(p[PREP[0]])
        elif PREP[1] in p and self.prep_open is not None:
            buckets[TRAINING_PREP] += float(p[PREP[1]]) - self.prep_open
            self.prep_open = None
        elif DATA[0] in p:
            self.data_open = float(p[DATA[0]])
        elif DATA[1] in p and self.data_open is not None:
            self.last_data = float(p[DATA[1]]) - self.data_open
            self.data_total += self.last_data
            if self.sync_data:  # the first data loading after a start blocks; later ones overlap the steps
                buckets[DATA_LOADING_SYNC] += self.last_data
                self.sync_data = False
            self.data_open = None


def recorder_account(payloads: list[dict[str, Any]], *, now: float) -> dict[str, Any]:
    """The ``goodput`` figures (data only) from the recorder's payloads, oldest first; ``now`` (POSIX
    seconds) ends the wall time of a job that has recorded no end."""
    nulls: dict[str, str] = {}
    notes: list[str] = []
    replay = _Replay(_custom_intervals(payloads))
    for p in payloads:
        replay.feed(p)
    buckets, custom, steps, job_end = replay.buckets, replay.custom, replay.steps, replay.job_end
    save_s = _checkpoint_seconds(payloads, ("save",), CKPT_SAVE_S)
    buckets[SAVE] = save_s
    buckets[RESTORE] = _checkpoint_seconds(payloads, ("restore", "emergency_restore"), CKPT_RESTORE_S)
    productive = replay.productive
    max_productive_step = 0
    if steps:
        last = max(steps)
        seg = _segment(steps, last, replay.intervals)
        productive += seg.productive
        replay.add_segment(seg)
        max_productive_step = seg.max_productive_step
        if job_end is not None:  # the last step counts only when the job recorded its end
            productive += job_end - steps[last]
            max_productive_step = last
        productive -= save_s  # blocking saves happen between steps (without steps, nothing to take them from)
    counts = (replay.data_total, replay.all_steps, replay.restarts, replay.repeated, max_productive_step)
    wall = _wall(replay.first_start, job_end, now, nulls, notes)
    if wall is not None and not 0.0 <= productive <= wall:
        nulls["productive_s"] = (f"the entries give {productive:.1f} s of productive time against {wall:.1f} s of "
                                 "wall time (the library rejects these entries too)")
    if wall is None or "productive_s" in nulls:
        nulls.setdefault("ettr", nulls.get("wall_s") or nulls["productive_s"])
        return _result(None, None, buckets, custom, *counts, nulls, notes)
    for name, seconds in list(buckets.items()):
        if seconds < 0 or seconds > wall:
            notes.append(f"{name} came out at {seconds:.1f} s, outside 0 to the wall time: counted as 0 "
                         "(as the library does)")
            buckets[name] = 0.0
    for kind, seconds in list(custom.items()):
        if seconds < 0 or seconds > wall:
            custom[kind] = 0.0
    known = sum(v for b, v in buckets.items() if b != OTHER) + sum(custom.values())
    buckets[OTHER] = max(0.0, wall - productive - known)
    return _result(wall, productive, buckets, custom, *counts, nulls, notes)


def _wall(first_start: float | None, job_end: float | None, now: float, nulls: dict[str, str],
          notes: list[str]) -> float | None:
    """First job start to the recorded end (else ``now``); None, with its reason in ``nulls``, where unknown."""
    if first_start is None:
        nulls["wall_s"] = "the recorder wrote no job_start_time for this job, so its wall time is unknown"
        return None
    wall = (job_end if job_end is not None else now) - first_start
    if job_end is None:
        notes.append("no job_end_time recorded: the wall time runs to the time of reading, as the library "
                     "counts it (the job is running, or ended without recording its end)")
    if wall <= 0:
        nulls["wall_s"] = f"the recorded job end is not after its start ({wall:.1f} s)"
        return None
    return wall


def _result(wall, productive, buckets, custom, data_total, all_steps, restarts, repeated, max_productive_step,
            nulls, notes) -> dict[str, Any]:
    def percent(seconds: float) -> float | None:
        if wall is None:
            return None
        return _r(100.0 * seconds / wall, 2) if 0 < seconds < wall else 0.0  # the library's breakdown rule

    ettr = productive / wall if wall and productive is not None else None
    return {
        "wall_s": _r(wall), "productive_s": _r(productive), "ettr": _r(ettr, 4),
        "goodput_percent": _r(100 * ettr, 2) if ettr is not None else None,
        "steps": len(all_steps) or None, "restarts": restarts, "repeated_steps": repeated,
        "max_productive_step": max_productive_step,
        "badput": {b: {"seconds": _r(s), "percent": percent(s)} for b, s in buckets.items()},
        "custom_badput_events": {k: {"seconds": _r(s), "percent": percent(s)} for k, s in custom.items()},
        "data_loading_async_s": _r(max(data_total - buckets[DATA_LOADING_SYNC], 0.0)),
        "nulls": nulls, "notes": notes,
    }


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)
