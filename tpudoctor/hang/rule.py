"""The hang rule contract: one declarative class per kind of place a stuck process can stand.

A rule reads one thread's stack (``ThreadView``: its Python frames, innermost first, and the native
frames under them when py-spy took ``--native``) and answers with a ``Match`` (the frame that shows
where the thread stands, and how deep it is) or None. ``classify`` asks every rule: the match nearest
the innermost frame wins, then the lowest ``rank``; ``fallback`` rules answer only when no other does.
``examples`` (stacks written as py-spy prints them) are the rule's tests and docs; the conformance test
runs them. Third-party rules come through the ``tpudoctor.hang_rules`` entry points, ids with their own
prefix (``acme-...``).
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Iterable
from typing import Any, ClassVar

from tpudoctor.findings import FindingKind
from tpudoctor.hang.model import Frame, ThreadStack
from tpudoctor.rule import Example, Rule

RULE_ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/", "/lib/python3", "/lib64/python3", "<frozen ")


class Category(str, enum.Enum):
    """Where a process stands. ``WAITING`` ones wait for other processes; the others are causes."""

    COLLECTIVE = "collective"
    DEVICE = "device"
    DATA = "data"
    CHECKPOINT = "checkpoint"
    COMPILING = "compiling"
    LOCK = "lock"
    BUSY = "busy"
    DEBUGGER = "debugger"
    IO = "io"
    SLEEPING = "sleeping"
    NATIVE = "native"
    RUNNING = "running"
    GONE = "gone"
    UNKNOWN = "unknown"

    @property
    def label(self) -> str:
        return _LABELS[self]

    @property
    def waits_for_others(self) -> bool:
        return self in WAITING


_LABELS = {
    Category.COLLECTIVE: "waiting in a collective",
    Category.DEVICE: "waiting for the device",
    Category.DATA: "loading data",
    Category.CHECKPOINT: "in checkpoint I/O",
    Category.COMPILING: "compiling",
    Category.LOCK: "waiting for a lock",
    Category.BUSY: "busy in Python",
    Category.DEBUGGER: "stopped in a debugger",
    Category.IO: "waiting on I/O",
    Category.SLEEPING: "sleeping or waiting in Python",
    Category.NATIVE: "inside a native call",
    Category.RUNNING: "running Python",
    Category.GONE: "gone (no training process)",
    Category.UNKNOWN: "not inspected (no stack)",
}
WAITING = frozenset({Category.COLLECTIVE, Category.DEVICE})


@dataclasses.dataclass(frozen=True)
class ThreadView:
    """One thread as the rules see it (from the last sample)."""

    name: str
    frames: tuple[Frame, ...]
    """Python frames, innermost first."""
    native_frames: tuple[Frame, ...] = ()
    """The native frames below the innermost Python frame (py-spy ``--native``), innermost first."""
    active: bool = False
    busy: bool = False
    """Running in every sample, in the same function, while the process used the CPU: a busy loop."""
    others: tuple[ThreadStack, ...] = ()
    """The process's other threads."""
    frameworks: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Match:
    frame: Frame | None
    """Where the thread stands: the frame that shows it (a native frame when only those do)."""
    depth: int
    """How many Python frames lie inside the deciding one (0: the innermost); native frames count as 0."""
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class StackText:
    """A stack written as py-spy prints it (innermost first: ``function (file:line)``; native frames as
    ``function (library)``): a hang rule example's input, read into a ``ThreadView`` when the example runs."""

    frames: tuple[str, ...]
    native: tuple[str, ...] = ()
    active: bool = False
    busy: bool = False
    others: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Other threads: (name, frames)."""
    frameworks: tuple[str, ...] = ("jax",)

    def view(self) -> ThreadView:
        others = tuple(ThreadStack(tid=i + 2, name=n, active=False, owns_gil=False, frames=[parse_frame(f) for f in fs])
                       for i, (n, fs) in enumerate(self.others))
        return ThreadView(name="MainThread", frames=tuple(parse_frame(f) for f in self.frames),
                          native_frames=tuple(parse_frame(f, native=True) for f in self.native), active=self.active,
                          busy=self.busy, others=others, frameworks=self.frameworks)


def stack_example(name: str, frames: tuple[str, ...], *, matches: bool, **stack: Any) -> Example:
    """A hang rule example: the stack (``StackText``'s fields) and whether the rule must match it."""
    return Example(name, StackText(frames, **stack), matches=matches)


_FRAME_TEXT = re.compile(r"^(?P<function>.+?) \((?P<where>[^()]*)\)(?:\s+`(?P<code>.*?)`)?(?:\s+holding `(?P<holding>.*)`)?$")
SITE = "/usr/local/lib/python3.11/site-packages/"
"""Where examples put library files, as py-spy's JSON names them."""
STDLIB = "/usr/local/lib/python3.11/"


def parse_frame(text: str, *, native: bool = False) -> Frame:
    """``read_shard (input_pipeline.py:50) `with open(path, "rb") as f:``` -> a Frame (for examples)."""
    match = _FRAME_TEXT.match(text.strip())
    if match is None:
        raise ValueError(f"not a frame as py-spy prints it: {text!r}")
    where = match.group("where")
    file, _, line = where.rpartition(":") if not native and ":" in where else (where, "", "0")
    holding = (match.group("holding"),) if match.group("holding") else ()
    return Frame(function=match.group("function"), file=file, line=int(line or 0), native=native,
                 code=match.group("code"), holding=holding)


def is_library(frame: Frame) -> bool:
    return any(marker in frame.file for marker in LIBRARY_MARKERS) or "/" not in frame.file and frame.file in (
        "threading.py", "queue.py", "socket.py", "selectors.py", "subprocess.py", "ssl.py")


def in_files(frame: Frame, parts: Iterable[str]) -> bool:
    path = frame.file.replace("\\", "/")
    return any(part in path for part in parts)


def words_of(frame: Frame) -> set[str]:
    """The words of a user frame's function and file names: ``read_shard`` in ``input_pipeline.py`` ->
    {read, shard, input, pipeline}."""
    name = frame.file.rsplit("/", 1)[-1].removesuffix(".py")
    text = f"{name} {frame.function}".replace(".", " ").replace("<", " ").replace(">", " ")
    words: set[str] = set()
    for token in re.split(r"[\s_]+", text):
        words.update(w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", token))
    return words


class HangRule(Rule[ThreadView]):
    """Base class for every hang rule. Subclasses set the metadata and implement ``match``: where a thread
    stands, not a finding (``classify`` weighs every rule's match)."""

    kind: ClassVar[FindingKind] = FindingKind.HANG
    category: ClassVar[Category] = Category.UNKNOWN
    rank: ClassVar[int] = 50
    """Among matches at the same depth, lower ranks win (specific before generic)."""
    fallback: ClassVar[bool] = False
    """Answers only when no other rule matched at any depth."""
    examples: ClassVar[tuple[Example, ...]] = ()

    def match(self, thread: ThreadView) -> Match | None:
        raise NotImplementedError

    @classmethod
    def example_problem(cls, example: Example) -> str | None:
        found = cls().match(example.input.view())
        if (found is not None) != example.matches:
            return f"{cls.id}: example {example.name!r} {'did not match' if example.matches else 'matched'}"
        if found is not None and not (isinstance(found, Match) and found.depth >= 0):
            return f"{cls.id}: example {example.name!r} gave {found!r}, not a Match"
        return None

    # Helpers for subclasses.
    @staticmethod
    def first_frame(thread: ThreadView, predicate, *, detail: str = "", python_only: bool = False) -> Match | None:
        """The innermost frame (native first, then Python) for which ``predicate`` holds."""
        if not python_only:
            for frame in thread.native_frames:
                if predicate(frame):
                    return Match(frame=frame, depth=0, detail=detail)
        for depth, frame in enumerate(thread.frames):
            if predicate(frame):
                return Match(frame=frame, depth=depth, detail=detail)
        return None
