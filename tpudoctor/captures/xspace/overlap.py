"""A capture's load beside the import that follows it: a thread imports pandas, which the tables need once the
events are decoded, while this thread decodes them.

An import holds the GIL throughout; the load lets it go while the compiled kernel runs and while the file's
bytes are read (``decoder``, ``planes_on_disk``), so on a core of its own the import runs meanwhile. On the
57 MB GPU capture (``profile analyze``, 2 cores, 24 alternating pairs with the other core idle, 2026-12-05):
0.441 -> 0.406 s wall, CPU 0.440 -> 0.468 s (the threads' hand-overs of the GIL), peak RSS 170 -> 191 MB (the
import's memory and the load's at once; the peak was the analyses'). With the other core busy the two threads
only take turns: forced on there, +16 ms (24 pairs). Hence only where ``spare_cores`` finds two.

The load stays in this thread, so its results, its errors and an interrupt are as they are without the import
beside it; the import is waited for at the end (a Ctrl-C, or the load's error, waits at most for the rest of the
import, ~0.15 s). Where the import fails in the thread, the load's own import of the module, when it comes to
it, raises the error, as it would have without the thread.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Iterator, Sequence


@contextlib.contextmanager
def importing(modules: Sequence[str]) -> Iterator[None]:
    """``modules`` imported by a thread while the body runs; the thread is waited for when the body ends, however
    it ends. A failed import is left to the body's own import of the module (the same error, raised there)."""
    thread = threading.Thread(target=_import, args=(tuple(modules),), name="tpudoctor-import")
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _import(modules: tuple[str, ...]) -> None:
    try:
        for name in modules:
            importlib.import_module(name)
    except BaseException:  # noqa: BLE001, S110 - the importing thread raises it again where it needs the module
        pass


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
