"""``tpudoctor memory --topology v5e:2x2 --program FILE.py:FACTORY``: compile the program for the topology with the
real TPU compiler, say whether it fits, what fills the peak, and which fixes, applied and recompiled, make it fit.

The analysis is ``tpudoctor.preflight.analysis.preflight`` (data only); its document is prepared
(``tpudoctor.documents``: scrubbed, validated against ``memory_preflight``) and rendered in any format.
"""

from __future__ import annotations

import argparse

from tpudoctor.exitcodes import ExitCode

PREFLIGHT_FORMATS = ("text", "json", "markdown", "html", "junit")


def add_preflight_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("preflight: compile for a TPU topology on this host (needs tpudoctor[tpu-compile])")
    group.add_argument("--topology", metavar="TOPO[,TOPO...]", default=None,
                       help="compile --program for this TPU topology (v5e:2x2, v4:2x2x1, v5p:2x2x1, v6e:2x2); "
                            "where it does not fit, the others listed are tried and the smallest that fits named")
    group.add_argument("--program", metavar="FILE.py:FACTORY", default=None,
                       help="FACTORY(mesh, **knobs) returns (step, args): the step (jitted or not) and its arguments "
                            "as jax.ShapeDtypeStructs with shardings on the mesh, or arrays")
    group.add_argument("--knob", action="append", metavar="NAME=V1[,V2...]", default=None,
                       help="a factory keyword and the values to try as fixes (repeatable; default: the factory's "
                            "preflight_knobs, else halved ints, flipped bools, float32 -> bfloat16)")
    group.add_argument("--set", action="append", metavar="NAME=VALUE", default=None, dest="settings",
                       help="a factory keyword's value for the program as compiled (repeatable; default: its default)")
    group.add_argument("--verify", type=int, default=1, metavar="N",
                       help="fixes compiled again at the compiler's default effort, best first, and more while the "
                            "best is one only screened (default 1; -1: all); every fix is first compiled at its least "
                            "effort")
    group.add_argument("--no-fixes", action="store_true", help="compile the program only, no fix")


def wants_preflight(args: argparse.Namespace) -> bool:
    return bool(args.topology or args.program)


def run_preflight(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor.errors import InputError, UsageError
    from tpudoctor.memory.pipeline import parse_mesh
    from tpudoctor.output import check_output, write_text
    from tpudoctor.preflight.program import parse_knob_values

    if not (args.topology and args.program):
        raise UsageError("a preflight needs both --topology and --program",
                         hint="tpudoctor memory --topology v5e:2x2 --program train.py:make_step --mesh data=2,model=2")
    if args.paths:
        raise UsageError("give either captures and logs to read or --topology/--program to compile, not both")
    fmt = settings.format if settings.format in PREFLIGHT_FORMATS else None
    if fmt is None:
        raise UsageError(f"a preflight writes {' or '.join(PREFLIGHT_FORMATS)}, not {settings.format}")
    check_output(args.output, inputs=[args.program.rsplit(":", 1)[0]])  # never over the program file
    topologies = [t.strip() for t in args.topology.split(",") if t.strip()]
    try:
        mesh = parse_mesh(args.mesh)
        knobs = parse_knob_values(args.knob)
        settings_given = {name: values[0] for name, values in parse_knob_values(args.settings).items()}
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.verify < -1:
        raise UsageError("--verify must be -1 (all) or more")
    from tpudoctor.preflight.analysis import preflight
    from tpudoctor.progress import progress

    with progress("tpudoctor memory preflight") as update:
        try:
            report = preflight(args.program, topologies, mesh=mesh, knobs=knobs, settings=settings_given,
                               apply_fixes=not args.no_fixes,
                               verify=None if args.verify == -1 else args.verify, progress=update)
        except ValueError as exc:  # a topology libtpu does not know, a mesh that does not cover it
            raise UsageError(str(exc).splitlines()[0] if str(exc) else repr(exc)) from None
    from tpudoctor.documents import prepare
    from tpudoctor.rendering import render

    write_text(args.output, render(prepare(report, redact=args.redact), fmt), fmt=fmt)
    if report.skipped or args.exit_zero:
        return ExitCode.OK
    if report.total_bytes is None and report.error:
        raise InputError(f"{args.program} does not compile for {topologies[0]}: {report.error.splitlines()[0]}")
    return ExitCode.OK if report.fits else ExitCode.FINDINGS
