"""Inside a native call that no frame names."""

from __future__ import annotations

from tpudoctor.hang.rule import Category, HangRule, Match, ThreadView, stack_example


class NativeCall(HangRule):
    """Fallback: the thread waits inside a call into native code at its innermost Python line, and no
    frame says which (a jitted function, a transfer, a C extension). ``--native`` shows the C/C++ frames."""

    id = "native-call"
    category = Category.NATIVE
    rank = 90
    fallback = True
    docs = "https://github.com/benfred/py-spy#can-py-spy-profile-native-extensions"
    examples = (
        stack_example("a jitted call with no frame below it", ("<module> (job.py:21)",), matches=True),
        stack_example("a running thread is not waiting", ("<module> (job.py:21)",), active=True, matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        if not thread.frames or thread.active:
            return None
        inner = thread.frames[0]
        hint = " (a JAX call: a jitted function or a transfer)" if "jax" in thread.frameworks else ""
        return Match(frame=inner, depth=0, detail=f"waits inside a native call at {inner.where}{hint}")

