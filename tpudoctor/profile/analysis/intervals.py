"""Time spans (ps) as intervals: the length of their union, the merged spans, and how much of
each window they cover."""

from __future__ import annotations

import numpy as np


def union_ps(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length of the union of intervals."""
    if len(starts) == 0:
        return 0
    s, e = _by_start(starts, ends)
    run_end = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > run_end[:-1]]
    seg_start = s[new]
    seg_end = np.r_[run_end[np.flatnonzero(new)[1:] - 1], run_end[-1]]
    return int((seg_end - seg_start).sum())


def _by_start(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The intervals in (stable) order of start: as they are where they come so, as a line's events do (no sort,
    no copies)."""
    if np.all(starts[1:] >= starts[:-1]):
        return starts, ends
    order = np.argsort(starts, kind="stable")
    return starts[order], ends[order]


def merged(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint (start, end) arrays."""
    if len(starts) == 0:
        return np.array([], np.int64), np.array([], np.int64)
    s, e = _by_start(starts, ends)
    run_end = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > run_end[:-1]]
    idx = np.flatnonzero(new)
    return s[new], np.r_[run_end[idx[1:] - 1], run_end[-1]]


def overlap_ps(starts: np.ndarray, ends: np.ndarray, win_start: np.ndarray, win_end: np.ndarray) -> np.ndarray:
    """For each window, the time covered by the (merged) intervals inside it."""
    ms, me = merged(np.asarray(starts, np.int64), np.asarray(ends, np.int64))
    if len(ms) == 0:
        return np.zeros(len(win_start), np.int64)
    cum = np.r_[0, np.cumsum(me - ms)]

    def covered_until(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(ms, t, side="right")  # intervals starting at or before t
        full = cum[np.maximum(k - 1, 0)]
        partial = np.where(k > 0, np.minimum(t, me[np.maximum(k - 1, 0)]) - ms[np.maximum(k - 1, 0)], 0)
        return np.where(k > 0, full + np.maximum(partial, 0), 0)

    ws, we = np.asarray(win_start, np.int64), np.asarray(win_end, np.int64)
    return np.maximum(covered_until(we) - covered_until(ws), 0)
