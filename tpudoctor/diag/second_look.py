"""A second look at a peer comparison that was not clear-cut: a noisy run (its chips scatter), or a chip near its
margin or slower only within its own noise. The same measurement is taken again, and judged on:

- the second look alone, where the first was noisy and the second is calm (a burst of noise on the VM lasts
  about as long as one look; pooling it in would keep the bar raised);
- otherwise both looks pooled: twice the repetitions, half the variance of each chip's median.

Which looks are taken, and why, goes with the timings (``Timings.looks``) into the rules' evidence. The
caller decides whether there is time (``fits``: a level keeps its time budget).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pandas as pd

from tpudoctor.diag import stats
from tpudoctor.diag.measure import Timings


def _summary(timings: Timings, table: pd.DataFrame, why: str | None) -> dict:
    return {"reps": int(timings.frame["rep"].nunique()), "spread": round(float(table["spread"].iloc[0]), 4),
            "wall_s": round(timings.wall_s, 1), "unclear": why}


def pooled(first: Timings, second: Timings) -> Timings:
    """Both looks' repetitions as one run (the second's numbered after the first's)."""
    later = second.frame.assign(rep=second.frame["rep"] + int(first.frame["rep"].max()) + 1,
                                at_s=second.frame["at_s"] + float(first.frame["at_s"].max()))
    return dataclasses.replace(first, frame=pd.concat([first.frame, later], ignore_index=True),
                               wall_s=first.wall_s + second.wall_s)


def settle(first: Timings, again: Callable[[], Timings], *, fits: Callable[[float], bool] = lambda s: True) -> Timings:
    """``first``, or (when it was unclear and ``fits(first.wall_s)``) what the two looks say together."""
    table = stats.compare_peers(first.frame, first.unit)
    why = stats.unclear(table)
    if why is None:
        return first
    if not fits(first.wall_s):
        return dataclasses.replace(first, looks=(_summary(first, table, why),),
                                   judged_on="the first look alone: no time left in the level's budget for a second")
    second = again()
    second_table = stats.compare_peers(second.frame, second.unit)
    looks = (_summary(first, table, why), _summary(second, second_table, stats.unclear(second_table)))
    noisy_then_calm = (float(table["spread"].iloc[0]) > stats.STEADY_SPREAD
                       >= float(second_table["spread"].iloc[0]))
    if noisy_then_calm:
        return dataclasses.replace(second, looks=looks, judged_on="the second look alone: the first was noisy")
    return dataclasses.replace(pooled(first, second), looks=looks, judged_on="both looks pooled")
