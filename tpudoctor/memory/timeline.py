"""Per-allocator memory timelines and their peak, from ``MemoryEvents``.

    from tpudoctor.memory.timeline import allocator_timelines
    for timeline in allocator_timelines(events).values():
        timeline.peak.bytes_in_use, timeline.peak.time_ms, timeline.frame   # one row per event

Bytes in use are the heap plus the stack (``bytes_allocated + bytes_reserved``), the allocator's
own figures after each event, as xprof's memory_profile counts them. The rules are xprof's
(``xprof/convert/xplane_to_memory_profile.cc``), so the numbers are its numbers:

* the peak is the largest bytes in use; of events that reach it, the last one in file order;
  ``capacity_bytes`` is heap + stack + free there; ``lifetime_peak_bytes`` is the allocator's own
  ``peak_bytes_in_use`` on its last event in file order (which may predate the capture);
* events are in time order (ties: file order), each free matched to the allocation before it at
  its address (``size_bytes``: a free's is its allocation's; TPU frees carry none of their own).
  xprof orders them by their offset from their own line's timestamp, which is time order where a
  host plane's lines share one timestamp (TensorFlow, the TPU runtime) and not where they do not
  (the JAX ROCm captures' ``python`` line starts ~0.9 ms before its ``py_xla_execute`` lines):
  ``order="xprof"`` reproduces xprof's order for a point-by-point comparison;
* a step id of -1 (no ``group_id``) becomes the previous known step + 1 (0 before any);
* ``sampled`` gives at most ``max_points`` points, each the largest in its box of consecutive
  points (xprof draws 1000).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tpudoctor.captures.memory_events import MemoryEvents

MAX_TIMELINE_POINTS = 1000  # xprof's max_num_snapshots

TIMELINE_COLUMNS = ("time_ps", "time_ms", "offset_ps", "is_allocation", "bytes_in_use", "heap_bytes", "stack_bytes",
                    "free_bytes", "fragmentation", "lifetime_peak_bytes", "size_bytes", "allocation_bytes",
                    "requested_bytes", "addr", "tf_op", "shape", "dtype", "region_type", "step", "matched_row",
                    "event_row")


@dataclasses.dataclass(frozen=True)
class MemoryPeak:
    """An allocator's peak within the capture: the state after the event that reached it."""

    bytes_in_use: int
    heap_bytes: int
    stack_bytes: int
    free_bytes: int
    capacity_bytes: int
    fragmentation: float
    time_ps: int
    offset_ps: int
    step: int
    position: int
    """Row of the peak event in the timeline's ``frame``."""
    lifetime_peak_bytes: int
    """The allocator's own peak over its lifetime (``peak_bytes_in_use`` of its last event)."""

    @property
    def time_ms(self) -> float:
        return self.time_ps / 1e9


@dataclasses.dataclass
class AllocatorTimeline:
    """One allocator's events in time order (``frame``: ``TIMELINE_COLUMNS``) and its peak.

    ``matched_row``: for a free, the row of its allocation; for an allocation, the row of its free
    (or of the next allocation at its address, which ends it too); -1 where there is none.
    ``event_row``: the event's row in ``MemoryEvents.frame``."""

    allocator: str
    frame: pd.DataFrame
    peak: MemoryPeak
    unmatched_frees: int
    """Frees with no allocation before them at their address (allocated before the capture)."""
    reallocated: int
    """Allocations at an address whose previous allocation had no free: a free the capture missed."""
    time_key: str = "time_ps"
    """The column the rows are ordered by: ``time_ps``, or ``offset_ps`` (``order="xprof"``)."""

    def __len__(self) -> int:
        return len(self.frame)

    def sampled(self, max_points: int = MAX_TIMELINE_POINTS) -> pd.DataFrame:
        """At most ``max_points`` rows of ``frame``: all when there are no more, else each the
        largest bytes in use of its box of consecutive rows (the first of equals), as xprof samples."""
        n = len(self.frame)
        if n <= max_points:
            return self.frame
        width = n // max_points
        count1 = max_points * (width + 1) - n
        count2 = max_points - count1
        starts = np.concatenate([np.arange(count1) * width, width * count1 + np.arange(count2) * (width + 1)])
        values = self.frame["bytes_in_use"].to_numpy()
        box_max = np.maximum.reduceat(values, starts)
        box = np.repeat(np.arange(max_points), np.diff(np.append(starts, n)))
        at_max = np.flatnonzero(values == box_max[box])
        first = at_max[np.searchsorted(box[at_max], np.arange(max_points))]
        return self.frame.iloc[first]


def allocator_timelines(events: MemoryEvents, order: str = "time") -> dict[str, AllocatorTimeline]:
    """Each allocator's timeline, by allocator id in xprof's order (sorted as strings). ``order``:
    "time" (``time_ps``, then file order) or "xprof" (``offset_ps`` from each event's line, then file order)."""
    if order not in ("time", "xprof"):
        raise ValueError(f"order must be 'time' or 'xprof', not {order!r}")
    frame = events.frame
    out: dict[str, AllocatorTimeline] = {}
    if not len(frame):
        return out
    allocator_codes = frame["allocator"].cat.codes.to_numpy()
    categories = frame["allocator"].cat.categories
    for allocator in events.allocators:
        code = categories.get_loc(allocator)
        rows = np.flatnonzero(allocator_codes == code)
        out[allocator] = _timeline(allocator, frame, rows, "offset_ps" if order == "xprof" else "time_ps")
    return out


def _timeline(allocator: str, events: pd.DataFrame, rows: np.ndarray, time_key: str) -> AllocatorTimeline:
    picked = events.iloc[rows]
    order = np.lexsort((picked["file_order"].to_numpy(), picked[time_key].to_numpy()))
    chosen = picked.iloc[order]
    heap = chosen["heap_bytes"].to_numpy()
    stack = chosen["stack_bytes"].to_numpy()
    in_use = heap + stack
    is_alloc = chosen["is_allocation"].to_numpy()
    addr = chosen["addr"].to_numpy()
    matched, unmatched, reallocated = _match_by_address(is_alloc, addr)
    alloc_bytes = chosen["allocation_bytes"].to_numpy()
    size = alloc_bytes.copy()
    frees = np.flatnonzero(~is_alloc & (matched >= 0))
    size[frees] = alloc_bytes[matched[frees]]
    frame = pd.DataFrame({
        "time_ps": chosen["time_ps"].to_numpy(),
        "time_ms": chosen["time_ps"].to_numpy() / 1e9,
        "offset_ps": chosen["offset_ps"].to_numpy(),
        "is_allocation": is_alloc,
        "bytes_in_use": in_use,
        "heap_bytes": heap,
        "stack_bytes": stack,
        "free_bytes": chosen["free_bytes"].to_numpy(),
        "fragmentation": chosen["fragmentation"].to_numpy(),
        "lifetime_peak_bytes": chosen["lifetime_peak_bytes"].to_numpy(),
        "size_bytes": size,
        "allocation_bytes": alloc_bytes,
        "requested_bytes": chosen["requested_bytes"].to_numpy(),
        "addr": addr,
        **{name: _with_allocation_value(chosen[name].array, is_alloc, matched) for name in
           ("tf_op", "shape", "dtype", "region_type")},
        "step": _steps(chosen["group_id"].array),
        "matched_row": matched,
        "event_row": rows[order],
    })
    # the peak: the last event in file order at the largest bytes in use
    file_order = chosen["file_order"].to_numpy()
    top = in_use.max()
    candidates = np.flatnonzero(in_use == top)
    position = int(candidates[np.argmax(file_order[candidates])])
    last_in_file = int(np.argmax(file_order))
    peak = MemoryPeak(
        bytes_in_use=int(top), heap_bytes=int(heap[position]), stack_bytes=int(stack[position]),
        free_bytes=int(frame["free_bytes"].iat[position]),
        capacity_bytes=int(top + frame["free_bytes"].iat[position]),
        fragmentation=float(frame["fragmentation"].iat[position]), time_ps=int(frame["time_ps"].iat[position]),
        offset_ps=int(frame["offset_ps"].iat[position]), step=int(frame["step"].iat[position]), position=position,
        lifetime_peak_bytes=int(frame["lifetime_peak_bytes"].iat[last_in_file]),
    )
    return AllocatorTimeline(allocator=allocator, frame=frame, peak=peak, unmatched_frees=unmatched,
                             reallocated=reallocated, time_key=time_key)


def _match_by_address(is_alloc: np.ndarray, addr: np.ndarray) -> tuple[np.ndarray, int, int]:
    """(matched row per event, frees without an allocation, allocations over a live one): a free
    matches the event before it at its address when that is an allocation; an allocation is ended
    by the next event at its address (its free, or an allocation over it: a free the capture missed)."""
    n = len(addr)
    matched = np.full(n, -1, dtype=np.int64)
    if not n:
        return matched, 0, 0
    order = np.lexsort((np.arange(n), addr))  # by address, in time order within one
    previous = np.r_[-1, order[:-1]]
    same_address = np.r_[False, addr[order][1:] == addr[order][:-1]]
    ends = same_address & is_alloc[np.maximum(previous, 0)]  # the event before, at this address, is an allocation
    matched[previous[ends]] = order[ends]
    frees = ~is_alloc[order]
    matched[order[ends & frees]] = previous[ends & frees]
    unmatched = int((frees & ~ends).sum())
    reallocated = int((~frees & ends).sum())
    return matched, unmatched, reallocated


def _with_allocation_value(values: pd.Categorical, is_alloc: np.ndarray, matched: np.ndarray) -> pd.Categorical:
    """A free's tf_op/shape/dtype/region_type taken from its allocation (xprof's UpdateDeallocation)."""
    codes = np.asarray(values.codes).copy()
    frees = np.flatnonzero(~is_alloc & (matched >= 0))
    codes[frees] = codes[matched[frees]]
    return pd.Categorical.from_codes(codes, categories=values.categories, validate=False)


def _steps(group_id: pd.arrays.IntegerArray) -> np.ndarray:
    """Step of each event in time order: its group_id; without one, the last step seen + 1 (0 first)."""
    values = group_id.to_numpy(dtype=np.int64, na_value=-1)
    known = values != -1
    if known.all():
        return values
    last_known = np.maximum.accumulate(np.where(known, np.arange(len(values)), -1))
    previous = np.where(last_known >= 0, values[np.maximum(last_known, 0)], -1)
    return np.where(known, values, previous + 1)
