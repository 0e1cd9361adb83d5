"""Running Python: the last resort, for a thread that was not waiting anywhere."""

from __future__ import annotations

from tpudoctor.hang.rule import Category, HangRule, Match, ThreadView, stack_example


class RunningPython(HangRule):
    """Fallback: the thread was running Python when the stack was taken (not waiting anywhere)."""

    id = "running-python"
    category = Category.RUNNING
    rank = 99
    fallback = True
    docs = "https://github.com/benfred/py-spy#how-does-py-spy-work"
    examples = (
        stack_example("running", ("update (train.py:60)",), active=True, matches=True),
        stack_example("idle", ("update (train.py:60)",), matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        if not thread.frames or not thread.active:
            return None
        return Match(frame=thread.frames[0], depth=0, detail="runs Python")
