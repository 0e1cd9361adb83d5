"""``tpudoctor diag -r LEVEL`` as a product: ``run`` runs r1's node and runtime checks, measures the level on this
VM's devices and judges it (``tpudoctor.diag.pipeline``), or, with ``--all-workers``/``--workers``, runs diag on
every worker of the slice and merges their reports (``tpudoctor.diag.slice``); it returns the ``DiagReport``.
``DiagRunOptions.from_args`` turns the flags and settings into options and refuses bad ones."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tpudoctor.diag.faults import FaultPlan
from tpudoctor.diag.pipeline import DiagOptions
from tpudoctor.diag.report import DiagReport
from tpudoctor.errors import UsageError

R1_STEPS = (1, 3)
"""r1 reuses the checks of these triage steps: the node's state and health, the framework and runtime versions."""
WORKER_SETTINGS = ("worker", "format", "disable_plugins", "fail_on")
"""The settings each worker of a fan-out takes from here (its target is its own)."""
WORKER_FLAGS = ("--level", "--expect-chips", "--cpu-devices", "--hbm-gib", "--soak", "--reps", "--inject",
                "--distributed")
"""``diag``'s own flags that each worker takes as they were given here (not ``--redact``: the merge redacts once)."""


@dataclasses.dataclass(frozen=True)
class DiagRunOptions:
    measure: DiagOptions
    """What to measure and judge here (its ``node``, ``worker`` and ``accelerator_type`` are filled by ``run``)."""
    target: Any = None
    """The gcloud-style target (``tpudoctor.findings.Target``) r1's node checks read."""
    cpu_devices: int | None = None
    api_timeout_s: float = 30.0
    endpoints: Any = None
    fan_out: Callable[[], Any] | None = None
    """With ``--all-workers``/``--workers``: the ``FanOut`` to the slice's workers (made when the run starts)."""
    worker_argv: Callable[[str], list[str]] | None = None
    """The ``tpudoctor diag`` each worker of the fan-out runs."""

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> DiagRunOptions:
        """The flags and settings as options; a flag that cannot be right is a ``UsageError``."""
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
        measure = DiagOptions(level=args.level, faults=faults, expected_chips=args.expect_chips, hbm_gib=args.hbm_gib,
                              soak_s=soak_s, reps=args.reps, disabled_plugins=settings.disable_plugins,
                              distributed=_distributed(args))
        fan_out = worker_argv = None
        if getattr(args, "all_workers", False) or getattr(args, "workers", None):
            from tpudoctor.pod.slice_target import slice_fan_out

            def fan_out() -> Any:
                return slice_fan_out(args, settings, command="diag")

            def worker_argv(worker: str) -> list[str]:
                return settings.worker_argv("diag", keys=WORKER_SETTINGS, args=args, flags=WORKER_FLAGS,
                                            format="json", worker=worker)
        elif args.cpu_devices is not None and args.cpu_devices < 1:
            raise UsageError("--cpu-devices must be at least 1")
        return cls(measure=measure, target=settings.target(), cpu_devices=args.cpu_devices,
                   api_timeout_s=settings.api_timeout_s, endpoints=settings.endpoints, fan_out=fan_out,
                   worker_argv=worker_argv)


def run(inputs: Sequence[str], options: DiagRunOptions, progress: Callable[[str], None] | None = None
        ) -> DiagReport:
    """The level's tests of this VM's devices (diag reads no files: ``inputs`` is empty), or of every worker of
    the slice with ``options.fan_out``."""
    if inputs:
        raise UsageError(f"diag measures the devices and reads no files: {inputs[0]}")
    update = progress or (lambda message: None)
    if options.fan_out is not None:
        return _fanout(options)
    from tpudoctor.diag.pipeline import run as run_diag

    _set_cpu_devices(options.cpu_devices)
    target = options.target
    update("node and runtime checks")
    node_findings, accelerator_type = _node_findings(options)
    measure = dataclasses.replace(options.measure, accelerator_type=accelerator_type, worker=target.worker,
                                  node={"project": target.project, "zone": target.zone, "tpu": target.tpu})
    return run_diag(measure, node_findings=node_findings,
                    progress=lambda what, fraction: update(f"{what} ({fraction:.0%})"))


def _fanout(options: DiagRunOptions) -> DiagReport:
    from tpudoctor import __version__
    from tpudoctor.diag.report import DOCUMENT_KIND
    from tpudoctor.diag.slice import check_document, merge_outcomes
    from tpudoctor.pod.fanout import WorkerCommand

    assert options.fan_out is not None and options.worker_argv is not None  # set by from_args with --all-workers
    fan = options.fan_out()
    diag = WorkerCommand("diag", options.worker_argv, kind=DOCUMENT_KIND, what="diag report", read=check_document,
                         label=lambda w: f"worker {w}")
    return fan.run(diag, lambda outcomes: merge_outcomes(outcomes, name=fan.name, level=options.measure.level,
                                                          tool_version=__version__))


def _set_cpu_devices(count: int | None) -> None:
    """XLA reads the device count when JAX first loads its backend: set it before, refuse once too late."""
    if count is None:
        return
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


def _distributed(args: Any) -> dict | None:
    """``measure.join_distributed``'s arguments, or None without ``--distributed``."""
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


def _node_findings(options: DiagRunOptions) -> tuple[list, str | None]:
    """r1's checks of the node's state and the runtime, from the check engine (each a finding of kind check), and
    the VM's accelerator type where known (the node's, the VM metadata's, or TPU_ACCELERATOR_TYPE)."""
    from tpudoctor.context import CheckOptions, RunContext
    from tpudoctor.families import load_registry
    from tpudoctor.gcp.session import Session
    from tpudoctor.runner import Runner

    target = options.target
    registry = load_registry(disabled=options.measure.disabled_plugins)
    selected = [c for c in registry.check_classes() if c.runs_on == "worker" and int(c.step) in R1_STEPS]
    session = Session(options.endpoints, timeout_s=options.api_timeout_s, project=target.project)
    ctx = RunContext(target=target, options=CheckOptions(api_timeout_s=options.api_timeout_s), run_timeout_s=120.0,
                     session=session)
    runner = Runner(registry, ctx)
    report = runner.run(selected)
    target_facts = runner.store.ensure(["runtime.target"]).value("runtime.target") or {}
    return [r for r in report.results if r.status.value != "SKIP"], target_facts.get("accelerator_type")
