"""Where a run's throughput reached its steady state, and how noisy the steady windows are.

The first timed windows of a run are often warm-up (caches, allocator, thread pools, clocks: the dense
model on a CPU went 189k -> 291k examples/s from window 1 to 2), and counting them in the sample biases
the median down and widens the spread. The truncation point is chosen from the windows themselves by the
Marginal Standard Error Rule (MSER, White 1997; MSER-5 when each point is a mean of 5 observations; here
each window is already the mean of ``steps`` steps): drop the first ``d`` windows where ``d`` minimises
``sum((x_i - mean_d)^2) / (n - d)^2`` over the kept windows, so a head is dropped only when the gain in
spread outweighs the loss of windows. ``d`` is searched up to ``n // 2`` (past that the run was too short
to tell a warm-up from a drift) and applied up to ``max_dropped``; a minimum beyond it, with a window in
between far outside the later windows' spread, means the run did not clearly settle, which the caller reports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

METHOD = "mser"
SETTLED_SIGMAS = 3.0


@dataclasses.dataclass(frozen=True)
class SteadyState:
    dropped_windows: int
    """Warm-up windows dropped from the head of the run."""
    max_dropped_windows: int
    settled: bool
    """False when MSER's truncation point is past ``max_dropped_windows`` and a window between lies more than
    ``SETTLED_SIGMAS`` standard deviations of the later windows from their median: the run may still have been
    warming up."""
    kept: tuple[float, ...]
    cv: float | None
    """Coefficient of variation (sample standard deviation / mean) of the kept windows; None under 2 windows."""
    method: str = METHOD

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "dropped_windows": self.dropped_windows,
                "max_dropped_windows": self.max_dropped_windows, "settled": self.settled,
                "kept_windows": len(self.kept), "cv": self.cv}


def mser_truncation(samples: Sequence[float]) -> int:
    """The MSER truncation point: how many head windows to drop (searched over 0..n//2)."""
    values = np.asarray(samples, dtype=np.float64)
    n = len(values)
    if n < 3:
        return 0
    best_d, best_score = 0, float("inf")
    for d in range(n // 2 + 1):
        kept = values[d:]
        score = float(((kept - kept.mean()) ** 2).sum()) / (n - d) ** 2
        if score < best_score:  # ties keep the earlier point: drop no window without a gain
            best_d, best_score = d, score
    return best_d


def coefficient_of_variation(samples: Sequence[float]) -> float | None:
    values = np.asarray(samples, dtype=np.float64)
    if len(values) < 2 or values.mean() <= 0:
        return None
    return float(values.std(ddof=1) / values.mean())


def steady_state(samples: Sequence[float], *, max_dropped: int) -> SteadyState:
    """Drop the warm-up head (MSER, at most ``max_dropped`` windows) and measure the rest's spread."""
    values = [float(s) for s in samples]
    truncation = mser_truncation(values)
    dropped = min(truncation, max(0, max_dropped))
    kept = tuple(values[dropped:])
    # Past the allowance, MSER's pick means something only if the windows it would still drop lie beyond
    # SETTLED_SIGMAS of the spread of those after it (a flat but noisy run often has its minimum there too).
    beyond, after = values[dropped:truncation], np.asarray(values[truncation:])
    spread = float(after.std(ddof=1)) if len(after) > 1 else 0.0
    settled = all(abs(v - float(np.median(after))) <= SETTLED_SIGMAS * spread for v in beyond)
    return SteadyState(dropped, max(0, max_dropped), settled, kept, coefficient_of_variation(kept))


def warmup_allowance(repeats: int) -> int:
    """Windows timed beyond the ``repeats`` asked for, so that dropping the warm-up still leaves ``repeats``."""
    return (repeats + 1) // 2


def default_max_dropped(windows: int, min_kept: int) -> int:
    """For a document that recorded no allowance (written before warm-up detection): keep ``min_kept``."""
    return max(0, min(windows // 2, windows - min_kept))


def measured_steady_state(measurement: Mapping[str, Any], *, min_kept: int) -> SteadyState:
    """The steady state of a bench document's ``measurement``, with the allowance it was timed with."""
    samples = measurement["samples"]
    recorded = (measurement.get("steady_state") or {}).get("max_dropped_windows")
    allowance = int(recorded) if recorded is not None else default_max_dropped(len(samples), min_kept)
    return steady_state(samples, max_dropped=allowance)
