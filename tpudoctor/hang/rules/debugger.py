"""Stopped in a debugger: a ``breakpoint()`` or ``pdb.set_trace()`` left in the code waits for input."""

from __future__ import annotations

from tpudoctor.hang.rule import (
    STDLIB,
    Category,
    HangRule,
    Match,
    ThreadView,
    in_files,
    stack_example,
)

FILES = ("/pdb.py", "/bdb.py", "/ipdb/", "/pudb/", "/debugpy/", "/pydevd", "/cmd.py")


class Debugger(HangRule):
    """The thread stands in a debugger (pdb, ipdb, pudb, debugpy): a breakpoint left in the training
    code waits for someone to type at a prompt that nobody sees on a pod."""

    id = "debugger"
    category = Category.DEBUGGER
    rank = 1
    docs = "https://docs.python.org/3/library/pdb.html"
    examples = (
        stack_example("breakpoint() in the loop",
                    (f"Cmd.cmdloop ({STDLIB}cmd.py:126)", f"Pdb._cmdloop ({STDLIB}pdb.py:352)",
                     f"Pdb.interaction ({STDLIB}pdb.py:417)", f"Pdb.user_line ({STDLIB}pdb.py:271)",
                     f"Bdb.dispatch_line ({STDLIB}bdb.py:91)", "train_step (train.py:57)"), matches=True),
        stack_example("no debugger", ("read_shard (input_pipeline.py:50)",), matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        found = self.first_frame(thread, lambda f: not f.native and in_files(f, FILES), python_only=True)
        if found is None:
            return None
        user = next((f for f in thread.frames[found.depth:] if not in_files(f, FILES) and "/lib/python3" not in f.file),
                    found.frame)
        return Match(frame=user, depth=found.depth, detail="a breakpoint waits for input at a debugger prompt")
