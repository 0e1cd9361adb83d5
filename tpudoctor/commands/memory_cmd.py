"""``tpudoctor memory PATH...``: what fills memory at the peak, what to shrink and how much each fix saves.

Layers: ``tpudoctor.memory.pipeline`` reads the captures and logs and judges them (data only);
``tpudoctor.reports.views.memory`` is its view (``tpudoctor.rendering``).
"""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import add_output_flags, add_plugin_flag, add_redact_flag
from tpudoctor.commands.memory_preflight import add_preflight_flags
from tpudoctor.exitcodes import ExitCode
from tpudoctor.formats import MEMORY_FORMATS

SETTINGS = {"format": "text", "fail_on": "fail", "disable_plugins": None}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "memory", help="what fills memory at the peak, what to shrink and how much each fix saves",
        description="Read profiler captures (.xplane.pb files, a run folder <logdir>/plugins/profile/<run>/ with "
                    "one file per host, or the logdir; local or gs://), JAX device memory profiles (.prof, from "
                    "jax.profiler.save_device_memory_profile) and logs holding XLA's or libtpu's out-of-memory report "
                    "('-' for stdin). Per host: each allocator's peak (bytes in use, when, step, capacity, "
                    "fragmentation) and the buffers live there, the program running at the peak by bucket "
                    "(parameters, optimizer state, activations, temporaries, padding, fragmentation...) and the "
                    "fixes ranked by what they save. Per log: the out-of-memory listing (fixes unknown: text has "
                    "no buffer plan). Across hosts: every chip's peak and the one that stands out, if any.")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help=".xplane.pb captures, profile run folders or logdirs, device memory profiles (.prof), "
                             "or text logs ('-': stdin); local or gs://")
    sizes = parser.add_argument_group("what the capture does not say")
    sizes.add_argument("--mesh", metavar="AXIS=N,...", default=None,
                       help="the device mesh, e.g. data=8,model=4 (the sharding fix needs it)")
    sizes.add_argument("--batch-size", type=int, default=None, metavar="N",
                       help="the per-device batch size (the batch fix infers it otherwise, less sure)")
    add_redact_flag(add_output_flags(parser, MEMORY_FORMATS))
    gate = parser.add_argument_group("exit status")
    gate.add_argument("--fail-on", choices=("warn", "fail"), default=None,
                      help="lowest status that exits 1 (default: fail: an out-of-memory report, or a fix that "
                           "alone makes a program that does not fit fit)")
    gate.add_argument("--exit-zero", action="store_true", help="exit 0 whatever the findings")
    add_plugin_flag(parser)
    add_preflight_flags(parser)
    parser.set_defaults(handler=run, settings_spec=SETTINGS)


def run(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor.commands.common import gate_for
    from tpudoctor.commands.memory_preflight import run_preflight, wants_preflight
    from tpudoctor.documents import prepare
    from tpudoctor.errors import UsageError
    from tpudoctor.findings import exit_code_for
    from tpudoctor.memory.pipeline import MemoryOptions, analyze, parse_mesh
    from tpudoctor.output import check_output, write_text
    from tpudoctor.progress import progress
    from tpudoctor.rendering import render

    if wants_preflight(args):
        return run_preflight(args, settings)
    fmt = settings.format_for(MEMORY_FORMATS)
    check_output(args.output, inputs=args.paths)
    if not args.paths:
        raise UsageError("say what to read: captures (.xplane.pb), profile run folders or logdirs, or logs",
                         hint="tpudoctor memory /tmp/trace/plugins/profile/2024_01_01_00_00_00/ oom.log")
    try:
        mesh = parse_mesh(args.mesh)
    except ValueError as exc:
        raise UsageError(f"--mesh: {exc}") from None
    if args.batch_size is not None and args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    options = MemoryOptions(mesh=mesh, batch_size=args.batch_size,
                            disabled_plugins=tuple(settings.disable_plugins or ()))
    with progress("tpudoctor memory") as update:
        report = analyze(args.paths, options, progress=update)
    prepared = prepare(report, redact=args.redact)
    write_text(args.output, render(prepared, fmt, verbose=args.verbose, gate=gate_for(args, settings)), fmt=fmt)
    return exit_code_for(report, fail_on=settings.fail_on, exit_zero=args.exit_zero)
