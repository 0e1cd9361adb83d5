"""Is a worker's excess persistent or random, and since when? One number per step in, a verdict out.

A worker that is slow by chance in some steps (random imbalance, the noise of a shared host) is
above its peers' median in about half the steps; a worker with a persistent problem is above it in
nearly every step, by a margin larger than its own step-to-step spread. ``excess_test`` asks both:
a one-sided sign test (the count of steps above the peers, Bonferroni-corrected for the number of
workers looked at) and the median excess against its standard error (median absolute deviation).
``onset`` finds where a worker's excess changed level (the best single split of its steps, kept when
the shift is large against the spread within the two parts), so a slowdown that began mid-run is
dated and tested on the steps since.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

ALPHA = 0.05
MIN_T = 3.0
MIN_STEPS = 4
MIN_ONSET_T = 5.0
MAD_TO_SD = 1.4826


@dataclasses.dataclass(frozen=True)
class ExcessTest:
    persistent: bool
    p_value: float
    t: float
    median_excess: float
    steps_above: int
    steps: int
    onset_index: int | None  # index into the steps where the excess began; None: from the first step


def sign_test_p(above: int, n: int) -> float:
    """P(at least ``above`` of ``n`` steps above the median by chance)."""
    return sum(math.comb(n, k) for k in range(above, n + 1)) / 2.0 ** n if n else 1.0


def robust_t(x: np.ndarray) -> float:
    """The median over its standard error (from the MAD); inf when every value is the same and positive."""
    med = float(np.median(x))
    se = MAD_TO_SD * float(np.median(np.abs(x - med))) / math.sqrt(len(x))
    if se <= 0:
        return math.inf if med > 0 else 0.0
    return med / se


def onset(x: np.ndarray) -> int | None:
    """The step index where the excess rose to a new level and stayed, or None (no such shift)."""
    n = len(x)
    if n < 2 * 2:
        return None
    best, best_t = None, 0.0
    for k in range(2, n - 1):
        a, b = x[:k], x[k:]
        spread = math.sqrt((np.var(a, ddof=1) * (len(a) - 1) + np.var(b, ddof=1) * (len(b) - 1)) / (n - 2))
        # the within-part spread, floored so that two flat parts at nearly one level are no shift
        spread = max(spread, 1e-3 * (abs(float(np.median(b))) + abs(float(np.median(a)))), 1e-12)
        t = (float(np.mean(b)) - float(np.mean(a))) / (spread * math.sqrt(1 / len(a) + 1 / len(b)))
        if t > best_t:
            best, best_t = k, t
    return best if best_t >= MIN_ONSET_T else None


def excess_test(x: np.ndarray, workers: int, step_ms: float | None = None,
                min_share: float = 0.005) -> ExcessTest:
    """``x``: a worker's excess over its peers' median, one value per step. Persistent when, over the
    steps since its onset, it is above the peers in more steps than chance allows (p < ``ALPHA`` /
    ``workers``), its median excess is ``MIN_T`` standard errors above zero, and (given ``step_ms``,
    in the unit of ``x``) at least ``min_share`` of a step."""
    x = np.asarray(x, np.float64)
    x = x[np.isfinite(x)]
    start = onset(x) if len(x) >= MIN_STEPS else None
    tail = x[start:] if start is not None else x
    n = len(tail)
    above = int((tail > 0).sum())
    p = sign_test_p(above, n)
    t = robust_t(tail) if n else 0.0
    med = float(np.median(tail)) if n else 0.0
    big = step_ms is None or med >= min_share * step_ms
    persistent = n >= MIN_STEPS and p < ALPHA / max(workers, 1) and t >= MIN_T and big
    return ExcessTest(persistent, p, t, med, above, n, start)
