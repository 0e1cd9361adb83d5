"""Events nested on a line: self time (duration minus direct children) and outermost events."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.events import take


def self_time_ps(frame: pd.DataFrame) -> np.ndarray:
    """Self time of each event: its duration minus its direct children on the same line.

    Events are grouped by (plane, line); within a line, children are events that start inside a
    parent and end no later. Done with a stack walk over sorted arrays per line (lines are few).
    """
    return np.array(self_time_arrays(frame["plane_id"].to_numpy(np.int64), frame["line_id"].to_numpy(np.int64),
                               frame["start_ps"].to_numpy(np.int64), frame["duration_ps"].to_numpy(np.int64)))


def self_time_arrays(plane: np.ndarray, line: np.ndarray, start: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """``self_time_ps`` of events given as arrays. Where the events already come in (plane, line,
    start, longest first) order, as a line's events are stored, no sort and no copy is made, and
    lines without nesting give the durations themselves."""
    if not len(start):
        return duration.copy()
    plane = np.asarray(plane, np.int64)
    line = np.asarray(line, np.int64)
    keys = plane * (1 << 32) + line
    order = None if _in_line_order(keys, start, duration) else _line_order(plane, line, keys, start, duration)
    return _self_time(keys, order, start, duration)


def line_self_time(start: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """``self_time_arrays`` of the events of one line (no plane and line arrays to compare)."""
    if not len(start):
        return duration.copy()
    order = None if _in_line_order(None, start, duration) else _one_line_order(start, duration)
    return _self_time(None, order, start, duration)


def _self_time(keys: np.ndarray | None, order: np.ndarray | None, start: np.ndarray,
               duration: np.ndarray) -> np.ndarray:
    """Self times of events in (line ``keys``, start, longest first) ``order`` (None: as they come; ``keys``
    None: all of one line)."""
    if order is not None:
        starts, durations = start[order], duration[order]
        keys = None if keys is None else keys[order]
    else:
        starts, durations = start, duration
    ends = starts + durations
    if keys is None:
        new_line = np.zeros(len(starts), bool)
        new_line[0] = True
    else:
        new_line = np.r_[True, keys[1:] != keys[:-1]]
    parent = _direct_parents(starts, ends, new_line, one_line=keys is None)
    has_parent = parent >= 0
    if not has_parent.any():  # no nesting (TPU XLA Ops lines mostly): self time = duration, no copy
        return duration
    out = duration.copy()
    child_dur = ends[has_parent] - starts[has_parent]
    target = parent[has_parent] if order is None else order[parent[has_parent]]
    np.subtract.at(out, target, child_dur)
    return np.maximum(out, 0)


def _direct_parents(starts: np.ndarray, ends: np.ndarray, new_line: np.ndarray, one_line: bool = False) -> np.ndarray:
    """Index of each event's direct parent in arrays sorted by (line, start, longest first), or -1.

    The parent is what a stack walk over the line finds: the nearest earlier event of the line that
    ends at or after the event's end and after its start. Found for all events at once by pointer
    jumping: an event that is not the parent sends the search to its own parent (or its own current
    candidate), since every event in between ends too early as well. A few rounds (about the nesting
    depth) over the nested events only, instead of a Python loop over every event."""
    need = np.maximum(ends, starts + 1)  # the end a parent must reach
    parent = np.full(len(starts), -1, np.int64)
    earlier_end = _running_max(ends) if one_line else _running_max_by_group(ends, new_line)
    todo = np.flatnonzero(earlier_end >= need)  # events that have a parent
    del earlier_end
    if not len(todo):
        return parent
    pointer = np.arange(-1, len(starts) - 1, dtype=np.int64)  # everything between pointer[k] and k ends too early
    cand = todo - 1
    while len(todo):
        ok = ends[cand] >= need[todo]
        parent[todo[ok]] = cand[ok]
        pointer[todo[ok]] = cand[ok]
        todo, cand = todo[~ok], cand[~ok]
        cand = pointer[cand]
        alive = cand >= 0  # never false for an event that has a parent; kept so no search runs past a line
        todo, cand = todo[alive], cand[alive]
        pointer[todo] = cand
    return parent


def _line_order(plane: np.ndarray, line: np.ndarray, keys: np.ndarray, start: np.ndarray,
                duration: np.ndarray) -> np.ndarray:
    """The order that sorts events by (plane, line, start, longest first). Events stored line after
    line and nearly in time order (device clock times) take one stable sort of a single integer key,
    which is close to linear on nearly sorted data; anything else a full lexsort."""
    if not np.any(keys[1:] < keys[:-1]):
        line_index = np.cumsum(np.r_[True, keys[1:] != keys[:-1]]) - 1
        low = int(start.min())
        span = int(start.max()) - low + 1
        if span * (int(line_index[-1]) + 1) < 2**62:
            order = np.argsort(line_index * span + (start - low), kind="stable")
            if _in_line_order(keys[order], start[order], duration[order]):
                return order
    return np.lexsort((-duration, start, line, plane))


def _one_line_order(start: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """``_line_order`` of the events of one line: a stable sort by start (close to linear on nearly sorted
    device times), else by (start, longest first)."""
    order = np.argsort(start, kind="stable")
    if _in_line_order(None, start[order], duration[order]):
        return order
    return np.lexsort((-duration, start))


def _in_line_order(keys: np.ndarray | None, start: np.ndarray, duration: np.ndarray) -> bool:
    """Are the events sorted by (line key, start, longest first) already (``keys`` None: all of one line)?"""
    if keys is None:
        step = start[1:] - start[:-1]
        if np.any(step < 0):
            return False
        return not np.any((step == 0) & (duration[1:] > duration[:-1]))
    same_line = keys[1:] == keys[:-1]
    if np.any(keys[1:] < keys[:-1]):
        return False
    step = start[1:] - start[:-1]
    if np.any(same_line & (step < 0)):
        return False
    ties = same_line & (step == 0)
    return not np.any(ties & (duration[1:] > duration[:-1]))


def _running_max(values: np.ndarray) -> np.ndarray:
    """``_running_max_by_group`` of a single group: the max of the earlier values (-1 at the first)."""
    shifted = np.empty(len(values), np.int64)
    shifted[:1] = -1
    shifted[1:] = values[:-1]
    return np.maximum.accumulate(shifted, out=shifted)


def _running_max_by_group(values: np.ndarray, group_start: np.ndarray) -> np.ndarray:
    """For each position, the max of the earlier values in its group (-1 at a group's first).
    Groups are runs of positions; ``values`` are non-negative integers (times)."""
    values = np.asarray(values, np.int64)
    shifted = np.empty(len(values), np.int64)
    shifted[:1] = -1
    shifted[1:] = values[:-1]
    shifted[group_start] = -1
    if not len(values):
        return shifted
    group_id = np.cumsum(group_start) - 1
    low = min(int(values.min()), 0)
    span = int(values.max()) - low + 2
    if span * (int(group_id[-1]) + 1) < 2**62:
        # each group lifted above the previous ones, so one running max never leaks across groups
        offset = group_id * span - low
        shifted += offset
        np.maximum.accumulate(shifted, out=shifted)
        shifted -= offset
        return shifted
    return pd.Series(shifted).groupby(group_id).cummax().to_numpy(np.int64)


def outermost(frame: pd.DataFrame) -> pd.DataFrame:
    """Drop events that lie inside an earlier event of the same name on the same line (ordered by start)."""
    if frame.empty:
        return frame
    every = np.arange(len(frame))
    return frame.iloc[_outermost_positions(frame, every, take(frame, "plane_id", every), take(frame, "line_id", every))]


def outermost_rows(host, rows: np.ndarray) -> np.ndarray:
    """``outermost`` of the host's events at ``rows``, as their rows (by start): reads four columns of
    those rows and their lines' ids, copies no frame."""
    if not len(rows):
        return rows
    plane, line = host.line_ids(rows)
    return rows[_outermost_positions(host.events, rows, plane, line)]


def _packed(keys: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """Sort keys (least significant first, as ``np.lexsort`` takes them) as one int64 that sorts alike, where their
    ranges fit in it: one sort pass instead of one per key."""
    if not len(keys[0]):
        return keys
    packed = np.zeros(len(keys[0]), np.int64)
    scale = 1
    for key in keys:
        high = int(key.max())
        if high == np.iinfo(np.int64).max:  # missing names: one past the largest other one
            others = key[key != high]
            key = np.where(key == high, int(others.max()) + 1 if len(others) else 0, key)
        low, high = int(key.min()), int(key.max())
        width = high - low + 1
        if scale * width >= 2**62:
            return keys
        packed += (key - low) * scale
        scale *= width
    return (packed,)


def _outermost_positions(frame: pd.DataFrame, rows: np.ndarray, plane: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Positions in ``rows`` of the outermost events there (by start); ``plane``/``line``: their lines' ids."""
    start = take(frame, "start_ps", rows)
    end = start + take(frame, "duration_ps", rows)
    names = frame["name"]
    if isinstance(names.dtype, pd.CategoricalDtype):  # sorted as pandas sorts a categorical: by code
        name = names.array.codes[rows].astype(np.int64)
    else:
        name = pd.factorize(names.array.take(rows), sort=True, use_na_sentinel=True)[0].astype(np.int64)
    unnamed = np.iinfo(np.int64).max
    name[name < 0] = unnamed  # missing names last, as pandas sorts them
    order = np.lexsort((start, *_packed((name, line, plane))))
    plane, line, name, start, end = plane[order], line[order], name[order], start[order], end[order]
    new_group = np.r_[True, (plane[1:] != plane[:-1]) | (line[1:] != line[:-1]) | (name[1:] != name[:-1])]
    # an event without a name has no name to be nested in: always kept
    nested = ~new_group & (start < _running_max_by_group(end, new_group)) & (name != unnamed)
    kept = order[~nested]
    return kept[np.argsort(start[~nested], kind="stable")]
