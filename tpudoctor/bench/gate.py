"""The throughput gate: is the current run slower than the baseline, beyond tolerance and beyond noise?

Pure functions over samples (examples/s per timed window; higher is better; compile excluded
by the caller). A regression needs both:

* the median dropped by more than ``tolerance`` (a practical threshold), and
* a one-sided Mann-Whitney U test says current < baseline with p < ``alpha`` (asv's test, so
  one slow window or CI jitter cannot fail a build).

The U test is implemented here with numpy (exact distribution for small samples without ties,
normal approximation with tie correction otherwise) so the core install needs no scipy. With
6 windows per side the smallest possible one-sided p is 1/C(12,6) = 0.00108, under asv's
alpha of 0.002; with 5 it is 0.004 and the test could never fire, hence ``MIN_WINDOWS``.

The U test asks whether the two samples come from one distribution, not whether the code got slower: a
machine shared with a noisy neighbour shifts and spreads the windows too. So each side's coefficient of
variation (CV) is compared: when the current run's CV is over ``NOISIER_FACTOR`` x the baseline's, the
drop must also clear the machine's extra noise (``tolerance + NOISE_MARGIN_SIGMAS x sqrt(cv_current^2 -
cv_baseline^2)``); a drop that does not is ``unknown`` (the machine was N x noisier), not a regression.
Where both runs recorded what the rest of the machine took (``busy_share``: other processes and steal, as a
share of all CPUs), a drop must also clear ``BUSY_FACTOR`` x the increase of that share (a 2-thread step on a
2-core machine stalls on the one contended core, so it can lose up to twice the share taken): a drop that
does not is ``unknown`` (busier).

A machine can also be slower for a whole run without being noisier (another VM on the host, a busy neighbour
for twenty seconds): its windows shift together and the U test cannot tell that from slower code. So a drop
the first run judges a regression (or ``unknown``) is timed again on a fresh run before it fails a build, as
perf CI systems retrigger a suspected regression (``confirm``): it is a regression only when every
confirmation run says so too; when one does not, the drop is ``unknown`` (not reproduced).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from tpudoctor.bench.steady import coefficient_of_variation

MIN_WINDOWS = 6
DEFAULT_TOLERANCE = 0.05
DEFAULT_ALPHA = 0.002
EXACT_MAX_TOTAL = 60
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_CONFIDENCE = 0.99
NOISIER_FACTOR = 1.5
"""The current run's CV over this many times the baseline's: the machine was noisier than the baseline's."""
BUSY_FACTOR = 2.0
"""A drop must clear the tolerance plus this many times the increase of the share other processes took."""
NOISE_MARGIN_SIGMAS = 2.0
"""On a noisier machine a drop must clear the tolerance plus this many of the extra relative spread."""

KEY_FIELDS = (
    "model", "model_version", "accelerator_type", "topology", "framework", "framework_version",
    "libtpu_version", "global_batch_size", "per_replica_batch_size",
)


class GateInputError(ValueError):
    """Samples the gate cannot judge (too few, not finite, not positive)."""


def busy_share(measurement: Mapping[str, Any]) -> float | None:
    """The share of the machine's CPU that others (processes and the hypervisor) took while the windows were
    timed; None when the run did not record it (an older document, not Linux)."""
    machine = measurement.get("machine") or {}
    others, steal = machine.get("others_cpu_share"), machine.get("steal_share")
    return None if others is None else float(others) + float(steal or 0.0)


@dataclasses.dataclass(frozen=True)
class MannWhitney:
    u_statistic: float
    """U of the current sample: pairs where current > baseline (ties count one half)."""
    p_value: float
    """One-sided: the probability of a U this small if current and baseline came from one distribution."""
    method: str


@dataclasses.dataclass(frozen=True)
class KeyMismatch:
    field: str
    baseline: Any
    current: Any

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class GateResult:
    verdict: str
    """"regression", "improvement", "no_change", or "unknown" (a significant drop beyond tolerance that the
    machine's extra noise could explain)."""
    baseline_median: float
    current_median: float
    ratio: float
    """current_median / baseline_median; below 1 is slower."""
    change_pct: float
    tolerance: float
    alpha: float
    p_value_slower: float
    p_value_faster: float
    significant: bool
    """The change in the direction of ``ratio`` is significant at ``alpha``."""
    beyond_tolerance: bool
    ratio_ci_low: float
    ratio_ci_high: float
    n_baseline: int
    n_current: int
    method: str
    cv_baseline: float
    """Coefficient of variation of the baseline's windows (sample std / mean)."""
    cv_current: float
    noise_ratio: float | None
    """cv_current / cv_baseline (None when the baseline's windows do not vary): how many times noisier the machine was than the baseline's."""
    noisier: bool
    """noise_ratio > NOISIER_FACTOR."""
    noise_tolerance: float
    """The drop a regression must exceed: ``tolerance``, widened by the extra noise when ``noisier``."""
    unknown_reason: str | None = None
    """Why a verdict is ``unknown``: ``noisier`` (within the machine's extra noise), ``busier`` (within what the
    CPU other processes took could explain) or ``not_reproduced`` (a confirmation run did not show the drop)."""
    busy_share_increase: float | None = None
    """How much more of the machine's CPU others took during this run than during the baseline's (None: not
    recorded by both)."""

    @property
    def regressed(self) -> bool:
        return self.verdict == "regression"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def key_mismatches(baseline_key: Mapping[str, Any], current_key: Mapping[str, Any]) -> list[KeyMismatch]:
    return [
        KeyMismatch(field, baseline_key.get(field), current_key.get(field))
        for field in KEY_FIELDS
        if baseline_key.get(field) != current_key.get(field)
    ]


def compare(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
    busy_share_baseline: float | None = None,
    busy_share_current: float | None = None,
) -> GateResult:
    base = _checked(baseline, "baseline")
    cur = _checked(current, "current")
    base_median = float(np.median(base))
    cur_median = float(np.median(cur))
    ratio = cur_median / base_median
    slower = mann_whitney_less(cur, base)
    faster = mann_whitney_less(base, cur)
    low, high = bootstrap_ratio_ci(base, cur, seed=seed)
    cv_base, cv_cur = coefficient_of_variation(base) or 0.0, coefficient_of_variation(cur) or 0.0
    noise_ratio = cv_cur / cv_base if cv_base > 0 else None  # identical baseline windows: no spread to compare
    noisier = noise_ratio > NOISIER_FACTOR if noise_ratio is not None else cv_cur > 0
    noise_tolerance = (tolerance + NOISE_MARGIN_SIGMAS * math.sqrt(cv_cur**2 - cv_base**2)) if noisier else tolerance
    busier = (None if busy_share_baseline is None or busy_share_current is None
              else busy_share_current - busy_share_baseline)
    busy_tolerance = tolerance + BUSY_FACTOR * max(0.0, busier or 0.0)
    unknown_reason = None
    if ratio < 1.0 - tolerance and slower.p_value < alpha:
        verdict = "regression"
        if ratio >= 1.0 - noise_tolerance:
            verdict, unknown_reason = "unknown", "noisier"
        elif ratio >= 1.0 - busy_tolerance:
            verdict, unknown_reason = "unknown", "busier"
    elif ratio > 1.0 + tolerance and faster.p_value < alpha:
        verdict = "improvement"
    else:
        verdict = "no_change"
    significant = (slower.p_value if ratio < 1.0 else faster.p_value) < alpha
    return GateResult(
        verdict=verdict,
        baseline_median=base_median,
        current_median=cur_median,
        ratio=ratio,
        change_pct=(ratio - 1.0) * 100.0,
        tolerance=tolerance,
        alpha=alpha,
        p_value_slower=slower.p_value,
        p_value_faster=faster.p_value,
        significant=significant,
        beyond_tolerance=abs(ratio - 1.0) > tolerance,
        ratio_ci_low=low,
        ratio_ci_high=high,
        n_baseline=len(base),
        n_current=len(cur),
        method=slower.method,
        cv_baseline=cv_base,
        cv_current=cv_cur,
        noise_ratio=noise_ratio,
        noisier=noisier,
        noise_tolerance=noise_tolerance,
        unknown_reason=unknown_reason,
        busy_share_increase=busier,
    )


def needs_confirmation(result: GateResult) -> bool:
    """A drop that would fail the build, or that noise left undecided: time it again before judging."""
    return result.verdict in ("regression", "unknown")


def confirmed(first: GateResult, confirmations: Sequence[GateResult]) -> GateResult:
    """The first run's figures with the verdict its confirmation runs allow: ``unknown`` (``not_reproduced``)
    when a confirmation shows the drop gone (its median within tolerance of the baseline's, or faster); a
    regression when none does and at least one is a regression. A confirmation whose drop stays beyond
    tolerance without reaching significance, or that the machine's noise or load left ``unknown``, is no
    evidence either way; with nothing else, the last confirmation's own ``unknown`` stands."""
    if not confirmations:
        return first
    if any(c.ratio >= 1.0 - c.tolerance for c in confirmations):
        return dataclasses.replace(first, verdict="unknown", unknown_reason="not_reproduced")
    if any(c.verdict == "regression" for c in confirmations):
        return dataclasses.replace(first, verdict="regression", unknown_reason=None)
    return dataclasses.replace(first, verdict="unknown", unknown_reason=confirmations[-1].unknown_reason
                               or "not_significant")


def _checked(samples: Sequence[float], name: str) -> np.ndarray:
    values = np.asarray(list(samples), dtype=np.float64)
    if values.ndim != 1 or len(values) < MIN_WINDOWS:
        raise GateInputError(
            f"the {name} has {len(values)} timed window(s); the gate needs at least {MIN_WINDOWS} per side "
            f"(fewer can never reach significance)"
        )
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise GateInputError(f"the {name} samples must be finite, positive throughputs")
    return values


def rank_average(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    ranks = np.empty(len(values), dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    for start, end in zip(starts, ends, strict=True):
        ranks[order[start:end]] = (start + end + 1) / 2.0
    return ranks


def mann_whitney_less(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> MannWhitney:
    """One-sided Mann-Whitney U test of H1: values of ``x`` tend to be smaller than those of ``y``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, m = len(x), len(y)
    combined = np.concatenate([x, y])
    ranks = rank_average(combined)
    u = float(ranks[:n].sum() - n * (n + 1) / 2.0)
    has_ties = len(np.unique(combined)) < len(combined)
    if not has_ties and n + m <= EXACT_MAX_TOTAL:
        counts = _u_counts(n, m)
        p = float(counts[: int(round(u)) + 1].sum() / counts.sum())
        return MannWhitney(u, min(1.0, p), "mann-whitney-exact")
    _, tie_counts = np.unique(combined, return_counts=True)
    total = n + m
    tie_term = float(((tie_counts**3) - tie_counts).sum()) / (total * (total - 1))
    variance = n * m / 12.0 * ((total + 1) - tie_term)
    if variance <= 0:
        return MannWhitney(u, 1.0, "mann-whitney-normal")
    z = (u - n * m / 2.0 + 0.5) / math.sqrt(variance)  # +0.5: continuity correction towards the null
    return MannWhitney(u, 0.5 * math.erfc(-z / math.sqrt(2.0)), "mann-whitney-normal")


@lru_cache(maxsize=256)
def _u_counts(n: int, m: int) -> np.ndarray:
    """counts[u] = arrangements of n x's and m y's whose U equals u (no ties). Float64 is exact enough here."""
    if n == 0 or m == 0:
        return np.ones(1)
    counts = np.zeros(n * m + 1)
    with_x_last = _u_counts(n - 1, m)  # the largest value is an x: it beats all m y's
    counts[m: m + len(with_x_last)] += with_x_last
    with_y_last = _u_counts(n, m - 1)
    counts[: len(with_y_last)] += with_y_last
    return counts


def bootstrap_ratio_ci(base: np.ndarray, cur: np.ndarray, *, seed: int = 0,
                       resamples: int = BOOTSTRAP_RESAMPLES, confidence: float = BOOTSTRAP_CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of median(current) / median(baseline); reported, not gated on."""
    rng = np.random.default_rng(seed)
    base_medians = np.median(rng.choice(base, size=(resamples, len(base)), replace=True), axis=1)
    cur_medians = np.median(rng.choice(cur, size=(resamples, len(cur)), replace=True), axis=1)
    ratios = cur_medians / base_medians
    tail = (1.0 - confidence) / 2.0 * 100.0
    return float(np.percentile(ratios, tail)), float(np.percentile(ratios, 100.0 - tail))
