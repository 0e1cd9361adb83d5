"""What a framework line reader matches: the kinds of event a line can say (``Kind``) and the pattern rows
that recognise them (``Pattern``, written ``P(kind, regex)``), the step rows taken from the one step-line
grammar (``tpudoctor/logs/step_forms.toml``).
"""

from __future__ import annotations

import dataclasses
import enum
import re

from tpudoctor.logs import steps


class Kind(str, enum.Enum):
    START = "start"
    """A process of the job starts (XPK's ``XPK Start``, JAX's first system line, an elastic attempt)."""
    INIT_END = "init_end"
    """The accelerator is initialised (ends TPU_INITIALIZATION)."""
    PREP_END = "prep_end"
    """A training-preparation milestone (model and optimizer state built, training loop entered)."""
    STEP = "step"
    SAVE_START = "save_start"
    SAVE_BLOCKING_END = "save_blocking_end"
    """The blocking part of a save is over (an async save goes on in the background)."""
    SAVE_END = "save_end"
    RESTORE_START = "restore_start"
    RESTORE_END = "restore_end"
    DATA_START = "data_start"
    DATA_END = "data_end"
    COMPILE = "compile"
    """A compilation, with its duration where the line says it."""
    CACHE_HIT = "cache_hit"
    """JAX's persistent compilation cache served a program."""
    CACHE_WRITE = "cache_write"
    """JAX wrote a program to its persistent compilation cache (the cache is on, this was a miss)."""
    FAILURE = "failure"
    EXIT = "exit"
    NOTE = "note"
    """A line a reader needs for its own state (Keras' ``Epoch N/M``); the timeline skips it."""


@dataclasses.dataclass(frozen=True)
class Pattern:
    kind: Kind
    regex: re.Pattern
    mode: str | None = None
    unless: re.Pattern | None = None


def P(kind: Kind, regex: str, mode: str | None = None) -> Pattern:  # noqa: N802 - reads as a table row
    return Pattern(kind, re.compile(regex), mode)


def step_patterns(framework: str) -> tuple[Pattern, ...]:
    """A framework's training-step forms from the shared grammar."""
    return tuple(Pattern(Kind.STEP, f.regex, unless=f.unless) for f in steps.forms_of(framework) if f.kind == "step")


def step_keywords(framework: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f.keyword for f in steps.forms_of(framework) if f.kind == "step"))


def step_examples(framework: str) -> tuple[str, ...]:
    return tuple(line for f in steps.forms_of(framework) if f.kind == "step" for line in f.examples)
