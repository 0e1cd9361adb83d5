"""``tpudoctor memory --topology v5e:2x2 --program FILE.py:FACTORY`` as a product: ``run`` compiles the program for
the topology with the real TPU compiler and returns the ``PreflightReport`` (whether it fits, what fills the peak,
which fixes, applied and recompiled, make it fit). ``PreflightOptions.from_args`` turns the flags into options and
refuses bad ones."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tpudoctor.errors import InputError, UsageError
from tpudoctor.preflight.analysis import PreflightReport

PREFLIGHT_FORMATS = ("text", "json", "markdown", "html", "junit")


def wants_preflight(args: Any) -> bool:
    return bool(args.topology or args.program)


@dataclasses.dataclass(frozen=True)
class PreflightOptions:
    program: str
    """``FILE.py:FACTORY``: the run's one input."""
    topologies: tuple[str, ...]
    """The first is the program's; where it does not fit, the others are tried."""
    mesh: Mapping[str, int] | None = None
    knobs: Mapping[str, list[Any]] = dataclasses.field(default_factory=dict)
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    apply_fixes: bool = True
    verify: int | None = 1
    """Fixes compiled again at the default effort; None: all."""
    refuse_uncompiled: bool = True
    """A program that does not compile is an input error (exit 2) once the report is written (not with
    ``--exit-zero``)."""

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> PreflightOptions:
        """The flags as options; a flag that cannot be right is a ``UsageError``."""
        from tpudoctor.memory.pipeline import parse_mesh
        from tpudoctor.preflight.program import parse_knob_values

        if not (args.topology and args.program):
            raise UsageError("a preflight needs both --topology and --program",
                             hint="tpudoctor memory --topology v5e:2x2 --program train.py:make_step --mesh "
                                  "data=2,model=2")
        if args.paths:
            raise UsageError("give either captures and logs to read or --topology/--program to compile, not both")
        if settings.format not in PREFLIGHT_FORMATS:
            raise UsageError(f"a preflight writes {' or '.join(PREFLIGHT_FORMATS)}, not {settings.format}")
        try:
            mesh = parse_mesh(args.mesh)
            knobs = parse_knob_values(args.knob)
            settings_given = {name: values[0] for name, values in parse_knob_values(args.settings).items()}
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if args.verify < -1:
            raise UsageError("--verify must be -1 (all) or more")
        return cls(program=args.program, topologies=tuple(t.strip() for t in args.topology.split(",") if t.strip()),
                   mesh=mesh, knobs=knobs, settings=settings_given, apply_fixes=not args.no_fixes,
                   verify=None if args.verify == -1 else args.verify, refuse_uncompiled=not args.exit_zero)

    @property
    def program_file(self) -> str:
        """The file the program is read from (an ``-o`` may never name it)."""
        return self.program.rsplit(":", 1)[0]


def run(inputs: Sequence[str], options: PreflightOptions, progress: Callable[[str], None] | None = None
        ) -> PreflightReport:
    """Compile the program ``inputs`` names (``FILE.py:FACTORY``, one) for ``options.topologies``; the report's
    ``refusal`` is set where the program does not compile at all."""
    from tpudoctor.preflight.analysis import preflight

    if len(inputs) != 1:
        raise UsageError(f"a preflight compiles one program, not {len(inputs)}")
    program = inputs[0]
    try:
        report = preflight(program, list(options.topologies), mesh=options.mesh, knobs=options.knobs,
                           settings=options.settings, apply_fixes=options.apply_fixes, verify=options.verify,
                           progress=progress)
    except ValueError as exc:  # a topology libtpu does not know, a mesh that does not cover it
        raise UsageError(str(exc).splitlines()[0] if str(exc) else repr(exc)) from None
    if options.refuse_uncompiled and not report.skipped and report.total_bytes is None and report.error:
        report.refusal = InputError(f"{program} does not compile for {options.topologies[0]}: "
                                    f"{report.error.splitlines()[0]}")
    return report
