"""``tpudoctor diag -r 1..3``: levelled health tests of this VM's chips, judged against their peers and the
generation's published peaks, with the host-replacement command when a chip fails.

Layers: r1's node and runtime checks come from the check engine; ``tpudoctor.diag.pipeline`` measures the
level on the local devices and judges it with the diag rules (data only); ``tpudoctor.reports.diag_<format>``
renders the prepared document.
"""

from __future__ import annotations

import argparse
import os
import sys

from tpudoctor.commands.common import (
    add_output_flags,
    add_plugin_flag,
    add_redact_flag,
    add_target_flags,
)
from tpudoctor.commands.pod_check import add_pod_flags, wants_fanout
from tpudoctor.exitcodes import ExitCode
from tpudoctor.formats import DIAG_FORMATS

SETTINGS = {"project": None, "zone": None, "tpu": None, "worker": None, "api_timeout": "30s", "format": "text",
            "fail_on": "fail", "disable_plugins": None}
R1_STEPS = (1, 3)
"""r1 reuses the checks of these triage steps: the node's state and health, the framework and runtime versions."""


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
    parser.set_defaults(handler=run, settings_spec=SETTINGS)


WORKER_SETTINGS = ("worker", "format", "disable_plugins", "fail_on")
"""The settings each worker of a fan-out takes from here (its target is its own)."""
WORKER_FLAGS = ("--level", "--expect-chips", "--cpu-devices", "--hbm-gib", "--soak", "--reps", "--inject",
                "--distributed")
"""``diag``'s own flags that each worker takes as they were given here (not ``--redact``: the merge redacts once)."""


def _fanout(args: argparse.Namespace, settings):
    from tpudoctor import __version__
    from tpudoctor.commands.pod_check import slice_fan_out
    from tpudoctor.diag.report import DOCUMENT_KIND
    from tpudoctor.diag.slice import check_document, merge_outcomes
    from tpudoctor.pod.fanout import WorkerCommand

    fan = slice_fan_out(args, settings, command="diag")
    diag = WorkerCommand("diag", lambda w: settings.worker_argv("diag", keys=WORKER_SETTINGS, args=args,
                                                                flags=WORKER_FLAGS, format="json", worker=w),
                         kind=DOCUMENT_KIND, what="diag report", read=check_document, label=lambda w: f"worker {w}")
    return fan.run(diag, lambda outcomes: merge_outcomes(outcomes, name=fan.name, level=args.level,
                                                          tool_version=__version__))


def _set_cpu_devices(count: int | None) -> None:
    """XLA reads the device count when JAX first loads its backend: set it before, refuse once too late."""
    from tpudoctor.errors import UsageError

    if count is None:
        return
    if count < 1:
        raise UsageError("--cpu-devices must be at least 1")
    flag = f"--xla_force_host_platform_device_count={count}"
    if "jax" in sys.modules:
        import jax

        if jax.default_backend() == "cpu" and len(jax.local_devices()) != count:
            raise UsageError(f"--cpu-devices {count}: JAX is already loaded in this process with "
                             f"{len(jax.local_devices())} device(s)", hint=f"XLA_FLAGS={flag} tpudoctor diag ...")
        return
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if "host_platform_device_count" not in f]
    os.environ["XLA_FLAGS"] = " ".join([*flags, flag])
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _distributed(args: argparse.Namespace) -> dict | None:
    """``measure.join_distributed``'s arguments, or None without ``--distributed``."""
    from tpudoctor.errors import UsageError

    given = {"coordinator": args.coordinator, "num_processes": args.num_processes, "process_id": args.process_id}
    if not args.distributed:
        if any(v is not None for v in given.values()):
            raise UsageError("--coordinator, --num-processes and --process-id go with --distributed")
        return None
    if args.level < 3:
        raise UsageError("--distributed times the all-reduce across slices, an r3 test", hint="tpudoctor diag -r 3 "
                                                                                              "--distributed")
    set_ = [k for k, v in given.items() if v is not None]
    if set_ and len(set_) != 3:
        raise UsageError("--coordinator, --num-processes and --process-id go together (or none: JAX finds them "
                         "on a TPU VM)")
    if args.num_processes is not None and not 0 <= args.process_id < args.num_processes:
        raise UsageError(f"--process-id must be in 0..{args.num_processes - 1}")
    return {k: v for k, v in given.items() if v is not None}


def _node_findings(settings, target) -> tuple[list, str | None]:
    """r1's checks of the node's state and the runtime, from the check engine (each a finding of kind check), and
    the VM's accelerator type where known (the node's, the VM metadata's, or TPU_ACCELERATOR_TYPE)."""
    from tpudoctor.commands.common import session_for
    from tpudoctor.context import CheckOptions, RunContext
    from tpudoctor.families import load_registry
    from tpudoctor.runner import Runner

    registry = load_registry(disabled=settings.disable_plugins)
    selected = [c for c in registry.check_classes() if c.runs_on == "worker" and int(c.step) in R1_STEPS]
    options = CheckOptions(api_timeout_s=settings.api_timeout_s)
    session = session_for(settings, timeout_s=settings.api_timeout_s, project=target.project)
    ctx = RunContext(target=target, options=options, run_timeout_s=120.0, session=session)
    runner = Runner(registry, ctx)
    report = runner.run(selected)
    target_facts = runner.store.ensure(["runtime.target"]).value("runtime.target") or {}
    return [r for r in report.results if r.status.value != "SKIP"], target_facts.get("accelerator_type")


def run(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor.commands.common import gate_for
    from tpudoctor.diag.faults import FaultPlan
    from tpudoctor.diag.pipeline import DiagOptions
    from tpudoctor.diag.pipeline import run as run_diag
    from tpudoctor.documents import prepare
    from tpudoctor.errors import UsageError
    from tpudoctor.findings import exit_code_for
    from tpudoctor.output import check_output, write_text
    from tpudoctor.progress import progress
    from tpudoctor.rendering import render

    fmt = settings.format_for(DIAG_FORMATS)
    check_output(args.output)
    faults = FaultPlan.parse(args.inject)
    faults.check_level(args.level)
    if args.expect_chips is not None and args.expect_chips < 1:
        raise UsageError(f"--expect-chips must be at least 1 (got {args.expect_chips})")
    if args.reps is not None and args.reps < 3:
        raise UsageError("--reps must be at least 3 (a median of repetitions)")
    if args.hbm_gib is not None and not 0 < args.hbm_gib <= 64:
        raise UsageError("--hbm-gib must be in (0, 64]")
    soak_s = None
    if args.soak:
        from tpudoctor.config import parse_duration_s

        soak_s = parse_duration_s(args.soak, what="--soak")
        if soak_s <= 0:
            raise UsageError(f"--soak {args.soak}: the soak must last more than 0 s")
    distributed = _distributed(args)
    if wants_fanout(args):
        report = _fanout(args, settings)
        prepared = prepare(report, redact=args.redact)
        write_text(args.output, render(prepared, fmt, verbose=args.verbose, gate=gate_for(args, settings)), fmt=fmt)
        return exit_code_for(report, fail_on=settings.fail_on, exit_zero=args.exit_zero)
    _set_cpu_devices(args.cpu_devices)
    target = settings.target()
    with progress(f"tpudoctor diag -r {args.level}") as update:
        update("node and runtime checks")
        node_findings, accelerator_type = _node_findings(settings, target)
        options = DiagOptions(level=args.level, faults=faults, expected_chips=args.expect_chips,
                              accelerator_type=accelerator_type, hbm_gib=args.hbm_gib, soak_s=soak_s, reps=args.reps,
                              disabled_plugins=settings.disable_plugins,
                              node={"project": target.project, "zone": target.zone, "tpu": target.tpu},
                              worker=target.worker, distributed=distributed)
        report = run_diag(options, node_findings=node_findings,
                          progress=lambda what, fraction: update(f"{what} ({fraction:.0%})"))
    prepared = prepare(report, redact=args.redact)
    write_text(args.output, render(prepared, fmt, verbose=args.verbose, gate=gate_for(args, settings)), fmt=fmt)
    return exit_code_for(report, fail_on=settings.fail_on, exit_zero=args.exit_zero)
