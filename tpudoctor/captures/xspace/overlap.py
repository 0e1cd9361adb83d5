"""A capture's load beside the import that follows it: the events are decoded and tabulated in a thread while
this thread imports pandas, which the tables need once the events are decoded.

An import holds the GIL throughout; the load lets it go while the compiled kernel runs and while the file's
bytes are read (``decoder``, ``planes_on_disk``), so on a core of its own the import runs meanwhile. On the
57 MB GPU capture (``profile analyze``, 2 cores, 25 alternating pairs with the other core idle, 2026-12-05):
0.446 -> 0.414 s wall, CPU 0.445 -> 0.480 s (the threads' hand-overs of the GIL), peak RSS 173 -> 192 MB (the
import's memory and the load's at once; the peak was the analyses'). With the other core busy the two threads
only take turns: forced on there, +20 ms. Hence only where ``spare_cores`` finds two.

The results are the serial load's: the same function runs, in another thread. Its exception is raised here,
the same object; an import that fails here fails as it would have after the load (the load is waited for first).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def call_while_importing(work: Callable[[], T], modules: Sequence[str]) -> T:
    """``work()`` run in a thread while this thread imports ``modules``; its result, or its exception raised
    here. An import's error is raised once ``work`` is done, as where the import had come after it."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - whatever it raised is raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="tpudoctor-load")
    thread.start()
    try:
        for name in modules:
            importlib.import_module(name)
    finally:
        thread.join()
    if "error" in outcome:
        error = outcome.pop("error")
        raise error  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]


def spare_cores() -> int:
    """Cores this process may run on that no other work is running on now: its CPU affinity, less the tasks
    Linux counts as running this instant (``/proc/loadavg``; this thread is one of them) beyond the other
    cores. Where that count cannot be read, the affinity alone."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        allowed = os.cpu_count() or 1
    try:
        with open("/proc/loadavg", encoding="ascii") as handle:
            running = int(handle.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return allowed
    return max(0, min(allowed, (os.cpu_count() or allowed) - max(0, running - 1)))
