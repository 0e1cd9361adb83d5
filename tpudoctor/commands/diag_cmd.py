"""``tpudoctor diag -r 1..3``: levelled health tests of this VM's chips, judged against their peers and the
generation's published peaks, with the host-replacement command when a chip fails.

The product is ``tpudoctor.diag.product``: r1's node and runtime checks come from the check engine,
``tpudoctor.diag.pipeline`` measures the level on the local devices and judges it with the diag rules (data only),
or the slice's workers each run it (``--all-workers``); ``tpudoctor.reports.views.diag`` is its view.
"""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import (
    add_output_flags,
    add_plugin_flag,
    add_redact_flag,
    add_target_flags,
)
from tpudoctor.commands.pod_check import add_pod_flags
from tpudoctor.formats import DIAG_FORMATS
from tpudoctor.product import Product

SETTINGS = {"project": None, "zone": None, "tpu": None, "worker": None, "api_timeout": "30s", "format": "text",
            "fail_on": "fail", "disable_plugins": None}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "diag", help="health tests of this VM's chips: -r 1 (seconds), -r 2 (~2 min), -r 3 (~15 min soak)",
        description="Levelled health tests of the accelerator chips of this VM, with JAX on whatever backend is "
                    "present (TPU, GPU, or CPU: --cpu-devices N for N virtual devices). r1: the runtime loads, every "
                    "chip enumerates, the node's health and versions. r2: a GEMM against a golden result and "
                    "bitwise across chips, sustained matmul rate and memory bandwidth against the peers and the "
                    "published peak, all-reduce per mesh axis. r3: r2 and a soak with a slowdown detector.")
    parser.add_argument("-r", "--level", type=int, choices=(1, 2, 3), default=1, help="test level (default 1)")
    add_target_flags(parser)
    parser.add_argument("--api-timeout", default=None, metavar="DURATION",
                        help="limit for each Google Cloud API call of r1's node checks (default 30s)")
    tuning = parser.add_argument_group("sizes and faults")
    tuning.add_argument("--expect-chips", type=int, default=None, metavar="N",
                        help="chips this VM should show (default: from its accelerator type, where known: "
                             "TPU_ACCELERATOR_TYPE, the VM's metadata or --tpu's node; a v3-8 host shows 4 chips "
                             "as 8 JAX devices, a v4-8 host 4 chips as 4)")
    tuning.add_argument("--cpu-devices", type=int, default=None, metavar="N",
                        help="on the CPU backend, run on N virtual devices (XLA's host platform device count)")
    tuning.add_argument("--hbm-gib", type=float, default=None, metavar="GIB",
                        help="size of the bandwidth test's array on each device (default 1 GiB on a CPU, 4 GiB on an "
                             "accelerator); every device holds it and its result at once, so the CPU stand-in needs "
                             "about 2 x GIB x --cpu-devices of RAM")
    tuning.add_argument("--soak", default=None, metavar="DURATION", help="r3's soak length (default 13m)")
    tuning.add_argument("--reps", type=int, default=None, metavar="N", help="repetitions of each timed test")
    tuning.add_argument("--inject", action="append", default=[], metavar="FAULT",
                        help="inject a fault to test the detectors: slow:DEVICE:FRACTION, bitflip:DEVICE, "
                             "slowdown:DEVICE:FRACTION@AT (repeatable)")
    multi = parser.add_argument_group("across slices (r3)")
    multi.add_argument("--distributed", action="store_true",
                       help="join the multi-process JAX run every worker starts at once (jax.distributed.initialize; "
                            "on TPU VMs and GKE JAX finds the coordinator) and time the all-reduce across slices")
    multi.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                       help="the coordinator, where JAX cannot find it (with --num-processes and --process-id)")
    multi.add_argument("--num-processes", type=int, default=None, metavar="N", help="processes in the run")
    multi.add_argument("--process-id", type=int, default=None, metavar="I", help="this process's number, from 0")
    add_redact_flag(add_output_flags(parser, DIAG_FORMATS))
    gate = parser.add_argument_group("exit status")
    gate.add_argument("--fail-on", choices=("warn", "fail"), default=None,
                      help="lowest status that exits 1 (default: fail)")
    gate.add_argument("--exit-zero", action="store_true", help="exit 0 even when a chip fails")
    add_pod_flags(parser, "tpudoctor diag")
    add_plugin_flag(parser)
    parser.set_defaults(handler=PRODUCT, settings_spec=SETTINGS)



PRODUCT = Product("diag", "tpudoctor.diag.product", "DiagRunOptions", DIAG_FORMATS)
