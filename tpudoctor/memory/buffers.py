"""What was live at an allocator's peak: the buffers to shrink.

    from tpudoctor.memory.buffers import peak_breakdown
    breakdown = peak_breakdown(timeline)           # a PeakBreakdown
    breakdown.top.head(10)                         # largest first: tf_op, shape, dtype, size, count

``peak_breakdown`` counts every allocation seen before the peak and not yet freed (nor allocated
over) at it, whichever step it was made in; the heap bytes no seen allocation accounts for were
allocated before the capture started. ``xprof_active_allocations`` is xprof's own table
(memory_profile's ``activeAllocations``), which counts only the peak's step and shows the rest as
"unused preallocated device memory": kept to check the reader against xprof, and because a user
comparing with TensorBoard sees that table.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tpudoctor.memory.timeline import AllocatorTimeline, MemoryPeak

BUFFER_KEYS = ("size_bytes", "requested_bytes", "tf_op", "shape", "dtype", "region_type")
XPROF_KEYS = ("allocation_bytes", "requested_bytes", "tf_op", "region_type", "dtype", "shape")
PREALLOCATED = "unused preallocated device memory"


@dataclasses.dataclass
class PeakBreakdown:
    """An allocator's peak and what held it.

    ``live``: one row per buffer live at the peak (``size_bytes, requested_bytes, tf_op, shape,
    dtype, region_type, addr, allocated_ps, step, row``: its timeline row), largest first.
    ``top``: the live buffers with equal size, request, op, shape, dtype and region merged
    (``count``, ``total_bytes``, ``share_of_peak``), most bytes first."""

    allocator: str
    peak: MemoryPeak
    live: pd.DataFrame
    top: pd.DataFrame
    live_bytes: int
    """Bytes of the live buffers the capture saw allocated."""
    unattributed_heap_bytes: int
    """Heap in use at the peak that no seen allocation accounts for (allocated before the capture)."""

    @property
    def stack_bytes(self) -> int:
        return self.peak.stack_bytes


def live_at(timeline: AllocatorTimeline, position: int) -> np.ndarray:
    """Timeline rows of the allocations live just after row ``position``: made at or before it and
    not ended (freed, or allocated over) at or before it."""
    frame = timeline.frame
    rows = np.arange(min(position + 1, len(frame)))
    is_alloc = frame["is_allocation"].to_numpy()[rows]
    ender = frame["matched_row"].to_numpy()[rows]
    return rows[is_alloc & ((ender < 0) | (ender > position))]


def peak_breakdown(timeline: AllocatorTimeline) -> PeakBreakdown:
    """The buffers live at ``timeline.peak`` and their merged table."""
    peak = timeline.peak
    rows = live_at(timeline, peak.position)
    frame = timeline.frame
    live = pd.DataFrame({
        "size_bytes": frame["size_bytes"].to_numpy()[rows],
        "requested_bytes": frame["requested_bytes"].to_numpy()[rows],
        **{name: frame[name].array.take(rows) for name in ("tf_op", "shape", "dtype", "region_type")},
        "addr": frame["addr"].to_numpy()[rows],
        "allocated_ps": frame["time_ps"].to_numpy()[rows],
        "step": frame["step"].to_numpy()[rows],
        "row": rows,
    })
    live = live.sort_values(["size_bytes", "row"], ascending=[False, True], kind="stable").reset_index(drop=True)
    live_bytes = int(live["size_bytes"].sum())
    top = (live.groupby(list(BUFFER_KEYS), observed=True, sort=False, dropna=False)
               .agg(count=("row", "size"), total_bytes=("size_bytes", "sum"), first_row=("row", "min"))
               .reset_index())
    top["share_of_peak"] = top["total_bytes"] / peak.bytes_in_use if peak.bytes_in_use else 0.0
    top = top.sort_values(["total_bytes", "size_bytes", "first_row"], ascending=[False, False, True],
                          kind="stable").reset_index(drop=True)
    return PeakBreakdown(allocator=timeline.allocator, peak=peak, live=live, top=top, live_bytes=live_bytes,
                         unattributed_heap_bytes=peak.heap_bytes - live_bytes)


def xprof_active_allocations(timeline: AllocatorTimeline) -> pd.DataFrame:
    """xprof's memory_profile table of the allocations active at the peak, row for row
    (``XPROF_KEYS`` + ``occurrences``, ``special``): only the peak's step, up to the peak's time;
    the step is the last event's at the peak's bytes in use in timeline order; heap bytes no
    allocation of that step accounts for are one "unused preallocated device memory" row, the stack
    one "stack" row. Build the timeline with ``order="xprof"`` to read it as xprof does."""
    frame = timeline.frame
    peak = timeline.peak
    in_use = frame["bytes_in_use"].to_numpy()
    steps = frame["step"].to_numpy()
    peak_step = int(steps[np.flatnonzero(in_use == peak.bytes_in_use)[-1]])
    times = frame[timeline.time_key].to_numpy()
    peak_time = peak.offset_ps if timeline.time_key == "offset_ps" else peak.time_ps
    before = np.flatnonzero(times > peak_time)
    stop = int(before[0]) if len(before) else len(frame)
    rows = np.flatnonzero(steps[:stop] == peak_step)
    is_alloc = frame["is_allocation"].to_numpy()[rows]
    addr = frame["addr"].to_numpy()[rows]
    own_bytes = frame["allocation_bytes"].to_numpy()[rows]
    by_address = np.lexsort((np.arange(len(rows)), addr))
    sorted_addr = addr[by_address]
    same_as_next = np.r_[sorted_addr[1:] == sorted_addr[:-1], False]
    same_as_previous = np.r_[False, sorted_addr[:-1] == sorted_addr[1:]]
    last_at_address = np.zeros(len(rows), dtype=bool)
    last_at_address[by_address] = ~same_as_next
    after_allocation = np.zeros(len(rows), dtype=bool)
    previous = np.r_[0, by_address[:-1]]
    after_allocation[by_address] = same_as_previous & is_alloc[previous]
    active = rows[is_alloc & last_at_address]
    frees = ~is_alloc
    unmapped = (peak.heap_bytes - int(own_bytes[is_alloc].sum()) + int(own_bytes[frees].sum())
                - int(own_bytes[frees & ~after_allocation].sum()))
    table = pd.DataFrame({
        "allocation_bytes": frame["allocation_bytes"].to_numpy()[active],
        "requested_bytes": frame["requested_bytes"].to_numpy()[active],
        **{name: np.asarray(frame[name].array.take(active), dtype=object)
           for name in ("tf_op", "region_type", "dtype", "shape")},
        "special": None,
    })
    specials = []
    if unmapped > 0:
        specials.append((unmapped, PREALLOCATED, "persist/dynamic"))
    if peak.stack_bytes > 0:
        specials.append((peak.stack_bytes, "stack", "stack"))
    if specials:
        table = pd.concat([table, pd.DataFrame({
            "allocation_bytes": [s[0] for s in specials], "requested_bytes": [s[0] for s in specials],
            "tf_op": [s[1] for s in specials], "region_type": [s[2] for s in specials],
            "dtype": [""] * len(specials), "shape": ["unknown"] * len(specials),
            "special": [s[1] for s in specials],
        })], ignore_index=True)
    # xprof's order: bytes and request descending, then op, region, dtype, shape ascending
    text_keys = [np.unique(table[name].to_numpy(dtype=object).astype(str), return_inverse=True)[1]
                 for name in ("tf_op", "region_type", "dtype", "shape")]
    order = np.lexsort([*text_keys[::-1], -table["requested_bytes"].to_numpy(), -table["allocation_bytes"].to_numpy()])
    table = table.iloc[order].reset_index(drop=True)
    merged = (table.groupby(list(XPROF_KEYS), sort=False, dropna=False)
                   .agg(occurrences=("special", "size"), special=("special", "first"))
                   .reset_index())
    return merged
