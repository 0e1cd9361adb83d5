"""Sleeping, or waiting on an event, a queue or another thread, in Python."""

from __future__ import annotations

import re

from tpudoctor.hang.rule import (
    STDLIB,
    Category,
    HangRule,
    Match,
    ThreadView,
    in_files,
    stack_example,
)

FILES = ("/threading.py", "/queue.py", "/concurrent/futures/")
SLEEP_LINE = re.compile(r"\bsleep\(|\.wait\(|\.join\(|\bpause\(|\binput\(")


class Sleeping(HangRule):
    """Fallback: the thread sleeps (``time.sleep``) or waits in Python for an event, a queue, a future or
    another thread, and no other rule says what for."""

    id = "sleeping"
    category = Category.SLEEPING
    rank = 60
    fallback = True
    docs = "https://docs.python.org/3/library/threading.html"
    examples = (
        stack_example("time.sleep in the loop", ("wait_for_file (train.py:12) `time.sleep(5)`", "main (train.py:40)"),
                    matches=True),
        stack_example("Event.wait", (f"Condition.wait ({STDLIB}threading.py:331)", f"Event.wait ({STDLIB}threading.py:629)",
                                   "main (train.py:20)"), matches=True),
        stack_example("a native call is not a sleep", ("train_step (train.py:55)",), matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        if not thread.frames:
            return None
        inner = thread.frames[0]
        if inner.code and SLEEP_LINE.search(inner.code) and not in_files(inner, FILES):
            return Match(frame=inner, depth=0, detail=f"sleeps or waits at `{inner.code}`")
        found = self.first_frame(thread, lambda f: not f.native and in_files(f, FILES), python_only=True)
        if found is None or found.depth != 0:
            return None
        user = next((f for f in thread.frames if not in_files(f, FILES)), inner)
        return Match(frame=user, depth=0, detail=f"waits in {inner.function}")
