"""What a command is to the one skeleton that runs every command (``tpudoctor.cli.run_product``).

A command module declares its flags and exports ``PRODUCT``: a ``Product`` naming its formats, where its
inputs and side outputs are in the flags, and the module whose ``run(inputs, options, progress)`` returns its
report and whose options class turns the flags into options (``from_args(args, settings)``). The skeleton
does the rest, the same way for every command: refuse an unwritable ``-o`` (or one that names an input),
build the options, run, prepare the document once (redaction), render every requested format, write, exit.
Modules are named, not imported, so ``tpudoctor --help`` imports none of them.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from collections.abc import Sequence
from typing import Any


@dataclasses.dataclass(frozen=True)
class Product:
    name: str
    """As in ``tpudoctor NAME``: the progress title."""
    module: str
    """The module with ``run(inputs, options, progress) -> report`` and the options class."""
    options: str
    """The options class in ``module``: ``from_args(args, settings)``, a bad flag a ``UsageError``."""
    formats: tuple[str, ...] = ()
    """What ``--format`` takes (empty: text only, no ``--format``)."""
    inputs: str | None = None
    """The flag (``args`` attribute) holding the paths the run reads: handed to ``run``; ``-o`` may name none."""
    reads: tuple[str, ...] = ()
    """Other flags naming files the run reads (``-o`` may name none of them either)."""
    side_outputs: tuple[tuple[str, str], ...] = ()
    """(flag, format): more files written from the same document (``--junit FILE``)."""
    worker_slot: bool = False
    """``-o`` may hold ``{worker}``/``{host}``, filled from the report (``tpudoctor.pod.report_store``)."""
    pause_gc: bool = False
    """Cyclic GC off during the run and the rendering (millions of small objects: ``profile``)."""
    entry: str = "run"
    """The function in ``module`` that runs it."""

    def run(self, inputs: Sequence[str], options: Any, progress) -> Any:
        return getattr(importlib.import_module(self.module), self.entry)(inputs, options, progress)

    def options_from(self, args: argparse.Namespace, settings) -> Any:
        return getattr(importlib.import_module(self.module), self.options).from_args(args, settings)

    def input_paths(self, args: argparse.Namespace) -> list[str]:
        return paths_in(getattr(args, self.inputs) if self.inputs else None)

    def outputs(self, args: argparse.Namespace, settings) -> list[tuple[str | None, str]]:
        """(path, format) of every file the run writes: the side outputs asked for, then ``-o``."""
        side = [(getattr(args, flag), fmt) for flag, fmt in self.side_outputs if getattr(args, flag, None)]
        if not self.formats:
            fmt = "text"
        elif "format" in settings.keys:
            fmt = settings.format_for(self.formats)
        else:  # a command that takes no setting: its --format flag alone
            fmt = getattr(args, "format", None) or "text"
        return [*side, (getattr(args, "output", None), fmt)]


def paths_in(*values: Any) -> list[str]:
    """The paths in flag values, flattened (``--stacks`` is a list of lists; an unset flag is None)."""
    paths: list[str] = []
    for value in values:
        if isinstance(value, (list, tuple)):
            paths += paths_in(*value)
        elif isinstance(value, str):
            paths.append(value)
    return paths
