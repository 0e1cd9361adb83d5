"""Busy in Python: the thread runs the same Python code in every sample while the process burns CPU."""

from __future__ import annotations

from tpudoctor.hang.rule import Category, HangRule, Match, ThreadView, is_library, stack_example


class BusyLoop(HangRule):
    """The thread was running in every sample, always in the same function of the job's own code, while
    the process used the CPU: a loop that does not end (a retry or wait loop without sleep, a condition
    that never becomes true)."""

    id = "busy-loop"
    category = Category.BUSY
    rank = 8
    docs = "https://github.com/benfred/py-spy#how-does-py-spy-work"
    examples = (
        stack_example("spinning on a flag", ("wait_for_peers (train.py:31) `while not ready(): pass`",
                                           "main (train.py:40)"), active=True, busy=True, matches=True),
        stack_example("idle at the same line is not busy", ("wait_for_peers (train.py:31)",), matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        if not (thread.busy and thread.frames) or is_library(thread.frames[0]):
            return None
        return Match(frame=thread.frames[0], depth=0, detail="runs the same code in every sample and burns CPU")
