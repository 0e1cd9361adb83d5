"""``tpudoctor memory PATH...``: what fills memory at the peak, what to shrink and how much each fix saves.

The product is ``tpudoctor.memory.product``: ``tpudoctor.memory.pipeline`` reads the captures and logs and judges
them, ``tpudoctor.preflight`` compiles a program for a topology (``--topology``/``--program``); data only.
``tpudoctor.reports.views.memory`` is their view (``tpudoctor.rendering``).
"""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import add_output_flags, add_plugin_flag, add_redact_flag
from tpudoctor.formats import MEMORY_FORMATS
from tpudoctor.product import Product

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
    parser.set_defaults(handler=PRODUCT, settings_spec=SETTINGS)



PRODUCT = Product("memory", "tpudoctor.memory.product", "MemoryRunOptions", MEMORY_FORMATS, inputs="paths")


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
