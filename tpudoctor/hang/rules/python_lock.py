"""Waiting for a Python lock, and who holds it: a deadlock, or a lock held across blocking work."""

from __future__ import annotations

import re

from tpudoctor.hang.model import Frame, ThreadStack
from tpudoctor.hang.rule import STDLIB, Category, HangRule, Match, ThreadView, stack_example

ACQUIRE_LINE = re.compile(r"^\s*(?:async\s+)?with\b.*(?:lock|mutex|semaphore|cond)|\.acquire\(", re.IGNORECASE)
NATIVE = re.compile(r"PyThread_acquire_lock|lock_PyThread_acquire_lock|acquire_timed|rlock_acquire|_PyMutex_Lock")
LOCK_NAME = re.compile(r"with\s+(.+?)\s*(?:as\s+\w+\s*)?:|([\w.\[\]]+)\.acquire\(")


def _waits_for_lock(frames: list[Frame] | tuple[Frame, ...], native: tuple[Frame, ...] = ()) -> Frame | None:
    """The frame where the thread waits to take a lock: a native lock wait, or an innermost Python line
    that takes one (``with self._lock:``, ``lock.acquire()``)."""
    if any(NATIVE.search(f.function) for f in native):
        return frames[0] if frames else None
    inner = frames[0] if frames else None
    if inner is not None and inner.code and ACQUIRE_LINE.search(inner.code):
        return inner
    return None


def lock_expression(code: str | None) -> str | None:
    """``with self._lock:`` -> ``self._lock``."""
    match = LOCK_NAME.search(code or "")
    if match is None:
        return None
    return (match.group(1) or match.group(2)).strip()


def _holder(wanted: str | None, others: tuple[ThreadStack, ...]) -> tuple[ThreadStack, Frame] | None:
    """Another thread with a ``with`` on the same lock around the line where it stands."""
    if not wanted:
        return None
    short = wanted.rsplit(".", 1)[-1]
    for thread in others:
        for frame in thread.frames:
            for held in frame.holding:
                if lock_expression(held.split(" (", 1)[0]) in (wanted,) or f".{short}" in held or f" {short}" in held:
                    return thread, frame
    return None


class PythonLock(HangRule):
    """The thread waits to take a Python lock: its innermost line takes one (``with self._lock:``,
    ``lock.acquire()``; read from the source where the process runs) or its native frames wait in
    ``PyThread_acquire_lock``. When another thread of the process stands inside a ``with`` on the same
    lock, it is named as the holder; when the holder waits for a lock too, it is a deadlock."""

    id = "python-lock"
    category = Category.LOCK
    rank = 5
    docs = "https://docs.python.org/3/library/threading.html#lock-objects"
    examples = (
        stack_example("record() waits while the writer thread holds the lock in open()",
                    ("MetricsWriter.record (metrics.py:21) `with self._lock:`", "main (train.py:44)"),
                    others=(("metrics-writer", ("MetricsWriter.flush (metrics.py:33) `with open(self.path, \"a\") as "
                                                "handle:` holding `with self._lock:  # held while writing (metrics.py:30)`",
                                                f"Thread.run ({STDLIB}threading.py:982)")),),
                    matches=True),
        stack_example("lock.acquire()", ("Registry.update (registry.py:40) `self._lock.acquire()`",), matches=True),
        stack_example("a plain open() is not a lock", ("read_shard (input_pipeline.py:50) `with open(path) as f:`",),
                    matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        frame = _waits_for_lock(thread.frames, thread.native_frames)
        if frame is None:
            return None
        wanted = lock_expression(frame.code)
        holder = _holder(wanted, thread.others)
        what = f"`{wanted}`" if wanted else "a lock"
        if holder is None:
            return Match(frame=frame, depth=0, detail=f"waits for {what}; no other thread shows where it is held")
        other, where = holder
        if _waits_for_lock(other.frames):
            detail = (f"deadlock: waits for {what}, held by thread {other.name!r}, which itself waits for a lock at "
                      f"{where.function} ({where.where})")
        else:
            detail = (f"waits for {what}, held by thread {other.name!r} while it stands in {where.function} "
                      f"({where.where})" + (f" `{where.code}`" if where.code else ""))
        return Match(frame=frame, depth=0, detail=detail)
