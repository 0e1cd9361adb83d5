"""Where the paid time went: ETTR, goodput and badput in ml-goodput-measurement's bucket names.

Everything is measured from the lead worker's timeline (``Timeline.primary``): wall time is its first
to its last timestamped line; productive time is the step time that was not redone, less what the log
shows inside step intervals (blocking checkpoint saves, compilations, data waits) and less the excess
of outlier intervals. The first step of each start counts one median step as productive and its
excess as PROGRAM_STARTUP (as ml-goodput-measurement counts it). OTHER is the remainder, so the
buckets and productive time add up to wall time.

A figure the log cannot support is None with its reason in ``nulls``: no timestamps means no wall
time and no ETTR (MaxText's ``seconds:`` is the time since the previous step line: summing it is not
wall time), never an estimate presented as a measurement.
"""

from __future__ import annotations

from typing import Any

from tpudoctor.goodput import deviation
from tpudoctor.goodput.attribution import (
    Figures,
    attribute_startup,
    attribute_steady,
    attribute_tail,
    band,
)
from tpudoctor.goodput.buckets import (
    BUCKETS,
    OTHER,
    PROGRAM_STARTUP,
    RECOVERY,
    RESTORE,
    SAVE,
    WASTED,
)
from tpudoctor.goodput.mllog import FRAMEWORK as MLLOG_FRAMEWORK
from tpudoctor.goodput.run import Run
from tpudoctor.goodput.timeline import Stream, Timeline
from tpudoctor.logs.clock import iso_utc

MAX_OUTLIERS_LISTED = 10
OVERRUN_TOLERANCE = 0.01
OVERRUN_MIN_S = 5.0
"""Parts that overrun the wall by more than 1 % of it (and 5 s): the lines contradict each other, so no figure
rests on them (a few seconds of overlapping lines are rounding)."""


def step_statistics(stream: Stream) -> dict[str, Any]:
    """Median and MAD of the time per step over clean intervals (nothing else inside), timed first;
    the steps' own reported durations where the log has no times."""
    values: list[float] = []
    sampled = False
    for run in stream.runs:
        for dt, dn, _end, known, unknown in run.intervals():
            if dn > 0 and known == 0 and unknown < 0:
                values.append(dt / dn)
        if run.sample:
            values.extend(run.sample)
            sampled = True
    source = "timestamps"
    if not values:
        values = [v for run in stream.runs for v in run.reported_per_step]
        source = "reported" if values else None
    if not values:  # every timed interval has another event inside (fairseq notes a compilation each time): use them
        values = [dt / dn for run in stream.runs for dt, dn, _end, known, _unknown in run.intervals()
                  if dn > 0 and known == 0 and dt > 0]
        source = "timestamps, every interval with another line inside" if values else None
    if not values:
        return {"median_s": None, "mad_s": None, "source": None, "sampled": False, "n": 0, "ideal_s": None,
                "anomalous": 0}
    median, mad = deviation.median_and_mad(values)
    return {"median_s": median, "mad_s": mad, "source": source, "sampled": sampled, "n": len(values),
            "ideal_s": deviation.ideal_step_time(values),
            "anomalous": sum(v > deviation.threshold(median, mad) for v in values),
            "normal_mean_s": deviation.normal_mean(values)}


def _threshold(median: float, mad: float) -> float:
    return deviation.threshold(median, mad)


def _redo_from(runs: list[Run]) -> list[int | None]:
    """For each run, the lowest step any later run resumed from (the step after the checkpoint it restored,
    else its first step): this run's steps from there on were done again."""
    out: list[int | None] = []
    lowest: int | None = None
    for run in reversed(runs):
        out.append(lowest)
        if run.first_step is not None and not run.approx_steps:
            resumed = run.restored_step + 1 if run.restored_step is not None and run.restored_step < run.first_step \
                else run.first_step
            lowest = resumed if lowest is None else min(lowest, resumed)
    return list(reversed(out))


def account(timeline: Timeline, *, wall_start: float | None, wall_end: float | None,
            clock_jumps: list[dict[str, Any]] | None = None, clock_outliers: list[dict[str, Any]] | None = None,
            zone_skews: list[dict[str, Any]] | None = None, timed_run_s: float | None = None) -> dict[str, Any]:
    """The ``goodput`` section (data only) from the lead worker's timeline. ``clock_jumps``: where the lead source's
    clock went back, in line order (the reader's); without them, the jumps seen between step lines.
    ``timed_run_s``: MLPerf's run_start..run_stop, the benchmark's own training time."""
    stream = timeline.primary()
    nulls: dict[str, str] = {}
    if stream is None or not stream.runs:
        return _empty("no step, checkpoint or start line of a known framework in the log", timeline)
    runs = stream.runs
    stats = step_statistics(stream)
    median, mad = stats["median_s"], stats["mad_s"]
    figures = Figures()
    outliers: list[dict[str, Any]] = []
    jumps = clock_jumps if clock_jumps else [j for run in runs for j in run.clock_jumps]
    timed = wall_start is not None and wall_end is not None and \
        wall_end - wall_start - sum(j["jump_s"] for j in jumps) > 0
    if timed:
        _anchor(runs, wall_start, wall_end, jumps)
    # MLPerf's timed run (run_start..run_stop) is training by the benchmark's own rules, and ml-goodput-measurement's
    # goodput discounts no anomalous step (only the first step's excess, as PROGRAM_STARTUP): slow blocks there are
    # listed, not charged
    mlperf = MLLOG_FRAMEWORK in stream.frameworks
    bands, repeated = _attribute_runs(runs, timed, median, mad, wall_start, figures, outliers,
                                      stats.get("normal_mean_s"), charge_anomalous=not mlperf)
    if mlperf and timed_run_s is not None:
        _timed_run_is_training(figures, timed_run_s)
    wall, overrun = _charge_remainder(figures, wall_start, wall_end, jumps) if timed else (None, 0.0)
    steps_union, first_step, last_step = _step_union(runs)
    known_step = any(r.saves or r.restored_step is not None for r in runs)
    reached_first_step = any(run.stepped for run in runs)
    if steps_union is None and not known_step and runs[-1].end_reason == "the log ends" and not runs[-1].failures:
        steps_union = 0  # none in the log, but nothing says the job stopped: it may have been starting still
        figures.notes.append("no step line yet: the log ends during start-up with no error or exit line, so "
                             "whether the job went on to train is unknown")
        nulls["productive_s"] = nulls["ettr"] = ("the log ends before any step line and says nothing of the job's "
                                                 "end: a longer log, or its exit, would tell")
    elif steps_union is None and not known_step:
        steps_union = 0  # it started and stopped before its first step: 0 steps ran (not "unknown")
        figures.notes.append("no training step ran: the job started and stopped before its first step line")
    elif steps_union is None:
        nulls["steps"] = ("no step line, but a checkpoint or restore names a step: the job was training; its steps "
                          "in this log are unknown")
    saves = [s for run in runs for s in run.saves]
    if jumps:
        figures.notes.append(f"the clock went back {len(jumps)} time(s) (first at {jumps[0]['at']}, by "
                             f"{-jumps[0]['jump_s']:g} s): the wall time is the sum of the segments between the "
                             "jumps; the step interval across a jump is not timed")
    _wall_nulls(nulls, timed, wall_start, wall_end)
    if median is None:
        nulls["median_step_s"] = "fewer than two step lines with a time or a reported duration"
    badput = _badput(figures, timed, wall, saves, runs, nulls)
    productive = _productive(figures, timed, median, runs, steps_union, nulls)
    ettr = productive / wall if productive is not None and wall else None
    outliers.sort(key=lambda o: -o["excess_s"])
    return {
        "steps": steps_union,
        "reached_first_step": reached_first_step if (reached_first_step or not known_step) else None,
        "first_step": first_step,
        "last_step": last_step,
        "median_step_s": _r(median, 4),
        "step_time_mad_s": _r(mad, 4),
        "step_time_source": stats["source"],
        "step_time_deviation": {"ideal_step_s": _r(stats["ideal_s"], 4), "anomalous_steps": stats["anomalous"],
                                "rule": "ml-goodput-measurement: steps under 1 s left out of the ideal; ideal = mean "
                                        "of the steps at or below median + 3 MAD; above it, anomalous"},
        "outlier_steps": outliers[:MAX_OUTLIERS_LISTED],
        "outlier_count": len(outliers),
        "restarts": max(len(runs) - 1, 0),
        "repeated_steps": repeated,
        "checkpoint_saves": len(saves) + sum(r.saves_dropped for r in runs),
        "checkpoint_saves_sync": sum(1 for s in saves if s.mode == "sync"),
        "checkpoint_saves_async": sum(1 for s in saves if s.mode == "async"),
        "saves": [s.to_dict() for s in saves[:50]],
        "restores": [sp.to_dict() for r in runs for sp in r.spans if sp.kind == "restore"][:50],
        "compilations": {"reported": sum(len(r.compile_seconds) for r in runs),
                         "reported_s": _r(sum(sum(r.compile_seconds) for r in runs)),
                         "cache_hits": sum(r.cache_hits for r in runs),
                         "cache_writes": sum(r.cache_writes for r in runs)},
        "wall_s": _r(wall),
        "productive_s": _r(productive),
        "ettr": _r(ettr, 4),
        "goodput_percent": _r(100 * ettr, 2) if ettr is not None else None,
        "badput": badput,
        "nulls": nulls,
        "notes": _notes(figures, runs, stats, stream),
        "runs": bands,
        "reported_step_seconds_sum": _r(sum(run.reported_seconds_sum for run in runs))
        if any(r.reported_seconds_n for r in runs) else None,
        "step_span_s": _r(_step_span(runs)) if timed else None,
        "clock_jumps": jumps[:20],
        "consistency": _consistency(jumps, clock_outliers or [], zone_skews or [], overrun, wall),
        "failures": [f for r in runs for f in r.failures][:20],
    }


def _consistency(jumps: list[dict[str, Any]], outliers: list[dict[str, Any]], skews: list[dict[str, Any]],
                 overrun: float, wall: float | None) -> dict[str, Any]:
    """Whether the log's clocks agree with each other: ``unsupported`` (why no figure rests on them) when zoned
    and zoneless lines disagree by hours or the parts overrun the wall; ``confidence`` in the figures, and why."""
    reasons: list[str] = []
    unsupported: list[str] = []
    if skews:
        s = skews[0]
        apart = abs(s["skew_s"])
        apart_text = f"{apart / 86400:.1f} days" if apart >= 2 * 86400 else f"{apart / 3600:.1f} h"
        unsupported.append(f"lines with a zone and lines without disagree by {apart_text} "
                           f"({s['zoned_at']} says {s['zoned']}, {s['zoneless_at']} reads as {s['zoneless']} with "
                           f"times without a zone read as {s['tz']})")
    overrun_over = wall is not None and overrun > max(OVERRUN_MIN_S, OVERRUN_TOLERANCE * wall)
    if overrun_over:
        unsupported.append(f"the parts add up to {overrun:.1f} s more than the {wall:.1f} s wall time")
    if outliers:
        o = outliers[0]
        reasons.append(f"{len(outliers)} line(s) whose clock ran ahead of both neighbours were set aside (first at "
                       f"{o['at']}, {o['ahead_s']:g} s ahead; {o['treated']})")
    if jumps:
        reasons.append(f"the clock went back {len(jumps)} time(s): the wall time is the sum of the segments")
    level = "low" if unsupported else ("medium" if reasons else "high")
    return {"unsupported": "; ".join(unsupported) or None, "overrun_s": _r(overrun) if overrun > 0 else None,
            "clock_outliers": outliers[:20], "zone_skews": skews[:20],
            "confidence": {"level": level, "reasons": unsupported + reasons}}


def _anchor(runs: list[Run], wall_start: float, wall_end: float, jumps: list[dict[str, Any]]) -> None:
    """Runs whose start (or the last one's end) no line timed take the log's first (last) time."""
    for run in runs:
        if run.start_t is None:
            run.start_t = wall_start
    if runs[0].start_reason == "the log begins":
        runs[0].start_t = wall_start
    runs[-1].end_t = wall_end if jumps else max(runs[-1].end_t or wall_end, wall_end)


MLPERF_TAIL = "after the last step (final save, evaluation, shutdown)"


def _timed_run_is_training(figures: Figures, timed_run_s: float) -> None:
    """MLPerf's rules time the run from run_start to run_stop (the score): all of it is training time here, the
    first block's compilation and the evaluations between and after the blocks included, listed in a note."""
    tail = figures.other_parts.pop(MLPERF_TAIL, 0.0)
    figures.notes.append(f"MLPerf's timed run (run_start..run_stop, {timed_run_s:.3f} s) is training by the "
                         f"benchmark's rules: its first block's excess ({figures.buckets[PROGRAM_STARTUP]:.3f} s) "
                         f"and what follows the last block ({tail:.3f} s) count as training time")
    figures.buckets[PROGRAM_STARTUP] = 0.0
    figures.buckets[OTHER] -= tail
    figures.productive = timed_run_s


def clock_tick_s(runs: list[Run]) -> float:
    """The step lines' clock resolution read from their times: 1 s when every kept step time is a whole second
    (a time of day, ISO with no fraction), else 0 (the clock's fraction is finer than any step gap it judges)."""
    times = [t for run in runs for t in run.step_t]
    return 1.0 if len(times) >= 2 and all(t == int(t) for t in times) else 0.0


def _attribute_runs(runs: list[Run], timed: bool, median: float | None, mad: float | None,
                    wall_start: float | None, figures: Figures,
                    outliers: list[dict[str, Any]], normal_s: float | None = None,
                    charge_anomalous: bool = True) -> tuple[list[dict[str, Any]], int]:
    """Each run's time into ``figures`` (and its gap before it, its outliers): its summary with its bands, and
    the steps done again after a restart."""
    redo_from = _redo_from(runs)
    repeated = 0
    bands: list[dict[str, Any]] = []
    for i, run in enumerate(runs):
        run_bands: list[dict[str, Any]] = []
        if timed:
            gap_start = wall_start if i == 0 else runs[i - 1].end_t
            if gap_start is not None and run.start_t is not None and run.start_t > gap_start:
                bucket = OTHER if i == 0 else RECOVERY
                figures.add(bucket, run.start_t - gap_start, other_part="before the first start line")
                run_bands.append(band(bucket, gap_start, run.start_t - gap_start, wall_start,
                                      "before the first start" if i == 0 else "down until the next start"))
        if median is not None and timed and run.stepped:
            attribute_startup(run, median, figures, run_bands, wall_start)
            attribute_steady(run, median, _threshold(median, mad or 0.0), redo_from[i], figures, outliers,
                             run_bands, wall_start, normal_s, charge_anomalous, tick_s=clock_tick_s(runs))
            attribute_tail(run, i == len(runs) - 1, figures, run_bands, wall_start)
        elif timed and not run.stepped and run.start_t is not None and run.end_t is not None:
            # a start that never reached its first step: all of it lost to the disruption
            bucket = OTHER if i == len(runs) - 1 else WASTED
            figures.add(bucket, run.end_t - run.start_t, other_part="a start that never reached a step")
            run_bands.append(band(bucket, run.start_t, run.end_t - run.start_t, wall_start, "start-up, no step"))
        if redo_from[i] is not None and run.last_step is not None and run.last_step >= redo_from[i]:
            repeated += run.last_step - max(redo_from[i], run.first_step) + 1
        bands.append(_run_summary(run, run_bands))
    return bands, repeated


def _charge_remainder(figures: Figures, wall_start: float, wall_end: float,
                      jumps: list[dict[str, Any]]) -> tuple[float, float]:
    """The wall time (less the clock's jumps back) and by how much the parts overrun it; what no line explains
    goes to OTHER."""
    wall = wall_end - wall_start + sum(-j["jump_s"] for j in jumps)
    known = figures.productive + sum(figures.buckets[b] for b in BUCKETS if b != OTHER)
    remainder = wall - known - figures.buckets[OTHER]
    if remainder > 0:
        figures.add(OTHER, remainder, other_part="between the lines the log explains")
    elif remainder < -1e-6:
        figures.notes.append(f"the parts add up to {(-remainder):.1f} s more than the wall time (overlapping "
                             "lines); OTHER absorbs nothing")
    return wall, max(-remainder, 0.0)


def _wall_nulls(nulls: dict[str, str], timed: bool, wall_start: float | None, wall_end: float | None) -> None:
    if not timed and wall_start is not None and wall_end is not None:
        nulls["wall_s"] = (f"the log's last time ({iso_utc(wall_end)}) is not after its first "
                           f"({iso_utc(wall_start)}) and no backward step of the clock in between explains it, so the wall time is unknown")
        nulls["ettr"] = nulls["productive_s"] = "needs the wall time: " + nulls["wall_s"].split(", so")[0]
    elif not timed:
        nulls["wall_s"] = ("the log's lines carry no timestamps, so the wall time is unknown (step lines' own "
                           "durations such as MaxText's `seconds:` are the time since the previous step line: "
                           "their sum is not wall time); give a log with glog/absl or ISO time prefixes, or "
                           "read it from Cloud Logging (--tpu)")
        nulls["ettr"] = nulls["productive_s"] = "needs the wall time: " + nulls["wall_s"].split(",")[0]


def _badput(figures: Figures, timed: bool, wall: float | None, saves: list, runs: list[Run],
            nulls: dict[str, str]) -> dict[str, Any]:
    badput = {}
    for bucket in BUCKETS:
        seconds = figures.buckets[bucket] if timed else _reported_only(bucket, saves, runs)
        share = 100.0 * seconds / wall if seconds is not None and wall else None
        # a share over the wall cannot be true: capped, and said (the seconds stay as measured)
        entry: dict[str, Any] = {"seconds": _r(seconds), "percent": _r(min(share, 100.0), 2)
                                 if share is not None else None}
        if share is not None and share > 100.0:
            entry["over_wall"] = True
        if seconds is None:
            entry["reason"] = nulls.get("wall_s", "not measurable from this log")
        elif bucket in figures.estimated:
            entry["estimated"] = True
        if bucket == OTHER and figures.other_parts:
            entry["parts"] = {k: _r(v) for k, v in sorted(figures.other_parts.items(), key=lambda kv: -kv[1])}
        badput[bucket] = entry
    return badput


def _productive(figures: Figures, timed: bool, median: float | None, runs: list[Run], steps_union: int | None,
                nulls: dict[str, str]) -> float | None:
    """Productive seconds, or None (its reason in ``nulls``) where the log cannot place the steps in the wall."""
    if "productive_s" in nulls:  # already unknown, and why (no wall time; a log that ends in start-up)
        return None
    productive = figures.productive if timed else None
    if timed and median is None and any(run.stepped for run in runs):
        # One step line: no interval to time a step by, so how much of the wall was steps is unknown (not 0).
        productive = None
        nulls["productive_s"] = nulls["ettr"] = ("one step line with no time of its own: a step's length is "
                                                 "unknown, so how much of the wall time was training is unknown")
    elif timed and any(run.stepped for run in runs) and not any(run.first_step_t is not None for run in runs):
        productive = None
        nulls["productive_s"] = nulls["ettr"] = ("the step lines carry no timestamps (only the lines around them "
                                                 "do): where the steps fall in the wall time is unknown")
    elif timed and not any(run.stepped for run in runs) and steps_union is None:
        productive = None
        nulls["productive_s"] = nulls["ettr"] = nulls["steps"]
    return productive


def _notes(figures: Figures, runs: list[Run], stats: dict[str, Any], stream: Stream) -> list[str]:
    notes = figures.notes + [n for run in runs for n in run.notes]
    if stats["sampled"]:
        notes.append("more step intervals than kept one by one: the median comes from a fixed-size sample, "
                     "outliers from the intervals kept")
    if stream.out_of_order:
        notes.append(f"{stream.out_of_order} step line(s) went back without a restart: several workers print into "
                     "this log without a worker label; the figures follow the lead worker's pace")
    if runs and any(r.approx_steps for r in runs):
        notes.append("step numbers are approximate (HF Trainer loss dicts are numbered in order; tqdm-loggable "
                     "rounds to 3 significant digits): repeated steps are not counted")
    return notes


def _step_span(runs: list[Run]) -> float:
    return sum((run.last_step_t - run.first_step_t) for run in runs
               if run.last_step_t is not None and run.first_step_t is not None)


def _reported_only(bucket: str, saves: list, runs: list[Run]) -> float | None:
    """Without timestamps, only durations the lines report themselves are known."""
    if bucket == SAVE:
        values = [s.blocking_s for s in saves if s.blocking_source == "reported"]
        return sum(values) if values and len(values) == len(saves) else None
    if bucket == RESTORE:
        spans = [sp for r in runs for sp in r.spans if sp.kind == "restore"]
        return sum(sp.seconds for sp in spans) if spans and all(sp.source == "reported" for sp in spans) else None
    return None


def _run_summary(run: Run, bands: list) -> dict[str, Any]:
    return {"index": run.index, "start_t": run.start_t, "end_t": run.end_t, "start_reason": run.start_reason,
            "start_where": run.start_where, "end_reason": run.end_reason, "exit_code": run.exit_code,
            "first_step": run.first_step, "last_step": run.last_step, "step_lines": run.step_lines,
            "startup_s": _r(run.first_step_t - run.start_t) if run.first_step_t is not None
            and run.start_t is not None else None,
            "bands": sorted(bands, key=lambda b: (b["start_s"] if b["start_s"] is not None else 0.0))}


def _step_union(runs: list[Run]) -> tuple[int | None, int | None, int | None]:
    ranges = sorted((r.first_step, r.last_step) for r in runs if r.first_step is not None)
    if not ranges:
        return None, None, None
    total = 0
    cur_a, cur_b = ranges[0]
    for a, b in ranges[1:]:
        if a <= cur_b + 1:
            cur_b = max(cur_b, b)
        else:
            total += cur_b - cur_a + 1
            cur_a, cur_b = a, b
    total += cur_b - cur_a + 1
    return total, ranges[0][0], max(b for _, b in ranges)


def _empty(reason: str, timeline: Timeline) -> dict[str, Any]:
    nulls = {k: reason for k in ("steps", "wall_s", "ettr", "median_step_s", "productive_s")}
    return {"steps": None, "reached_first_step": None, "first_step": None, "last_step": None, "median_step_s": None, "step_time_mad_s": None,
            "step_time_source": None, "step_time_deviation": None, "outlier_steps": [], "outlier_count": 0, "restarts": None,
            "repeated_steps": None, "checkpoint_saves": None, "checkpoint_saves_sync": None,
            "checkpoint_saves_async": None, "saves": [], "restores": [],
            "compilations": {"reported": 0, "reported_s": None, "cache_hits": 0, "cache_writes": 0},
            "wall_s": None, "productive_s": None, "ettr": None, "goodput_percent": None,
            "badput": {b: {"seconds": None, "percent": None, "reason": reason} for b in BUCKETS},
            "nulls": nulls, "notes": [], "runs": [], "reported_step_seconds_sum": None, "step_span_s": None,
            "clock_jumps": [], "failures": [],
            "consistency": {"unsupported": None, "overrun_s": None, "clock_outliers": [], "zone_skews": [],
                            "confidence": {"level": "unknown", "reasons": [reason]}}}




def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)

