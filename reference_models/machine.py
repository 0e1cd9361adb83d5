"""What the rest of the machine did while a window was timed: CPU taken by other processes and by the
hypervisor (steal), as shares of the machine's CPU over the window's wall time.

A shared machine's throughput moves in steps when a neighbour wakes up (a 2-core VM where another process
takes a core slows a 2-thread XLA CPU step by up to half), and those steps look exactly like slower code to a
gate that sees only examples/s. Linux only (``/proc/stat``); elsewhere every figure is None.
"""

from __future__ import annotations

import os
import time
from typing import Any

_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_CPUS = os.cpu_count() or 1


def _machine_ticks() -> tuple[int, int] | None:
    """(busy ticks of every CPU, steal ticks) since boot, or None without /proc/stat."""
    try:
        with open("/proc/stat", "rb") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 8:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return user + nice + system + irq + softirq, steal


class CpuMeter:
    """``start()`` before a window and ``stop()`` after it give the others' share and the steal share."""

    def __init__(self) -> None:
        self._started: tuple[float, float, tuple[int, int] | None] | None = None

    def start(self) -> None:
        own = os.times()
        self._started = (time.perf_counter(), own.user + own.system, _machine_ticks())

    def stop(self) -> dict[str, Any]:
        if self._started is None:
            raise RuntimeError("stop() before start()")
        wall_0, own_0, ticks_0 = self._started
        own = os.times()
        wall_s, own_cpu_s, ticks = time.perf_counter() - wall_0, own.user + own.system - own_0, _machine_ticks()
        if ticks is None or ticks_0 is None or wall_s <= 0:
            return {"others_cpu_share": None, "steal_share": None}
        busy_s = (ticks[0] - ticks_0[0]) / _TICKS_PER_S
        steal_s = (ticks[1] - ticks_0[1]) / _TICKS_PER_S
        capacity_s = wall_s * _CPUS
        # The tick counters move in 1/CLK_TCK steps while our own time is exact: clamp the difference at 0.
        return {"others_cpu_share": max(0.0, busy_s - own_cpu_s) / capacity_s, "steal_share": steal_s / capacity_s}
