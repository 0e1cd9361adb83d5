"""``tpudoctor memory`` as a product: ``run`` reads profiler captures, device memory profiles and out-of-memory logs
and returns the ``MemoryReport`` (``tpudoctor.memory.pipeline``); with ``--topology`` and ``--program``
(``options.preflight``) it compiles the program instead and returns the ``PreflightReport``
(``tpudoctor.preflight.product``). ``MemoryRunOptions.from_args`` turns the flags into options and refuses bad
ones."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from tpudoctor.errors import UsageError
from tpudoctor.memory.pipeline import MemoryOptions, analyze, parse_mesh
from tpudoctor.preflight.product import PreflightOptions, wants_preflight


@dataclasses.dataclass(frozen=True)
class MemoryRunOptions:
    """One memory run's options: the analysis' of captures and logs, or the preflight's (then ``preflight``)."""

    analysis: MemoryOptions = MemoryOptions()
    preflight: PreflightOptions | None = None

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> MemoryRunOptions:
        """The flags as options; a flag that cannot be right is a ``UsageError``."""
        if wants_preflight(args):
            return cls(preflight=PreflightOptions.from_args(args, settings))
        if not args.paths:
            raise UsageError("say what to read: captures (.xplane.pb), profile run folders or logdirs, or logs",
                             hint="tpudoctor memory /tmp/trace/plugins/profile/2024_01_01_00_00_00/ oom.log")
        try:
            mesh = parse_mesh(args.mesh)
        except ValueError as exc:
            raise UsageError(f"--mesh: {exc}") from None
        if args.batch_size is not None and args.batch_size < 1:
            raise UsageError("--batch-size must be at least 1")
        return cls(MemoryOptions(mesh=mesh, batch_size=args.batch_size,
                                 disabled_plugins=tuple(settings.disable_plugins or ())))

    @property
    def reads(self) -> list[str]:
        """Files read besides the inputs (an ``-o`` may name none): the preflight's program file."""
        return [self.preflight.program_file] if self.preflight else []


def run(inputs: Sequence[str], options: MemoryRunOptions, progress: Callable[[str], None] | None = None) -> Any:
    """The memory report of the captures and logs ``inputs`` name ('-': stdin), or the preflight of the program
    ``options.preflight`` names (``inputs`` then empty)."""
    if options.preflight is not None:
        from tpudoctor.preflight.product import run as preflight

        return preflight([*inputs, options.preflight.program], options.preflight, progress)
    return analyze(list(inputs), options.analysis, progress=progress)
