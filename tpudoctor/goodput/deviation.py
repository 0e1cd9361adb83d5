"""ml-goodput-measurement's step-time deviation rule, exactly (its goodput_utils.compute_ideal_step_time and
get_anomalous_and_normal_step_times): the median and the median absolute deviation (scale 1) of the step times;
a step above median + 3 MAD is anomalous; the ideal step time is the mean of the steps at or below median + 3 MAD,
steps under 1 s left out.

>>> anomalous_and_normal([10.0, 10.0, 10.2, 9.9, 30.0])
([30.0], [10.0, 10.0, 10.2, 9.9])
>>> round(ideal_step_time([0.5, 10.0, 10.0, 10.2, 9.9, 30.0]), 3)
10.025
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

MADS = 3.0
MIN_STEP_S = 1.0
"""ml-goodput leaves steps under a second out of the ideal step time."""


def median_and_mad(step_times: Sequence[float]) -> tuple[float, float]:
    median = statistics.median(step_times)
    return median, statistics.median(abs(t - median) for t in step_times)


def threshold(median: float, mad: float) -> float:
    """A step time above this is anomalous."""
    return median + MADS * mad


def anomalous_and_normal(step_times: Sequence[float]) -> tuple[list[float], list[float]]:
    median, mad = median_and_mad(step_times)
    limit = threshold(median, mad)
    return [t for t in step_times if t > limit], [t for t in step_times if t <= limit]


def ideal_step_time(step_times: Sequence[float]) -> float | None:
    """The mean of the normal steps of a second or more; None when there are none."""
    kept = [t for t in step_times if t >= MIN_STEP_S]
    if not kept:
        return None
    _anomalous, normal = anomalous_and_normal(kept)
    return statistics.fmean(normal) if normal else None


def normal_mean(step_times: Sequence[float]) -> float | None:
    """The mean of the normal steps (all of them, short ones too): what an anomalous step is measured against
    (ml-goodput's get_extra_time_from_anomalous_steps)."""
    if not step_times:
        return None
    _anomalous, normal = anomalous_and_normal(step_times)
    return statistics.fmean(normal) if normal else None
