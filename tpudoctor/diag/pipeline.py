"""One diag run: measure what the level asks for on the local devices (with progress), judge it with the diag
rules, and assemble the ``DiagReport``. r1's node and runtime checks are gathered by the command (the check
engine) and handed in as findings."""

from __future__ import annotations

import dataclasses
import socket
import time
from collections.abc import Callable, Collection, Sequence

from tpudoctor.accelerator_peaks import peaks_for
from tpudoctor.diag import measure, second_look, stats
from tpudoctor.diag.expected import expected_count
from tpudoctor.diag.faults import FaultPlan
from tpudoctor.diag.levels import MEASUREMENTS, SECOND_LOOK_BUDGET_S, Sizes, sizes_for
from tpudoctor.diag.report import DiagReport
from tpudoctor.diag.rule import DiagInput
from tpudoctor.findings import Finding

Progress = Callable[[str, float], None]


@dataclasses.dataclass(frozen=True)
class DiagOptions:
    level: int = 2
    faults: FaultPlan = FaultPlan()
    expected_chips: int | None = None
    """``--expect-chips``: overrides the count the accelerator type gives."""
    accelerator_type: str | None = None
    """This VM's accelerator type (``v4-8``), where known: how many chips a host of it has."""
    hbm_gib: float | None = None
    soak_s: float | None = None
    reps: int | None = None
    node: dict = dataclasses.field(default_factory=dict)
    disabled_plugins: Collection[str] = ()
    worker: str | None = None
    distributed: dict | None = None
    """Join a multi-process JAX run first (``measure.join_distributed``'s arguments; {} to let JAX find them)."""


def measure_level(options: DiagOptions, progress: Progress | None = None) -> tuple[DiagInput, Sizes]:
    """Every measurement of the level, taken once; a peer comparison that was not clear-cut is taken a second time
    while the level's budget allows (matmul first: the compute fault is the one a job feels most)."""
    started = time.perf_counter()
    say = progress or (lambda what, fraction: None)
    if options.distributed is not None:
        say("joining the multi-process run", 0.0)
        measure.join_distributed(**options.distributed)
    say("enumerating devices", 0.0)
    inventory = measure.inventory()
    if inventory.devices:
        options.faults.check_devices(len(inventory.devices))
    sizes = sizes_for(inventory.backend, hbm_gib=options.hbm_gib, soak_s=options.soak_s, reps=options.reps)
    kind = inventory.devices[0].kind if inventory.devices else ""
    subject = DiagInput(level=options.level, host=socket.gethostname(), inventory=inventory,
                        expected=expected_count(options.expected_chips, options.accelerator_type),
                        soak_windows=sizes.soak_windows, peaks=peaks_for(kind),
                        faults=options.faults.faults, node=dict(options.node),
                        distributed=options.distributed is not None)
    wanted = MEASUREMENTS[options.level]
    if not inventory.devices:
        return subject, sizes
    if "gemm" in wanted:
        say("GEMM against the golden, bitwise across chips", 0.05)
        subject.gemm = measure.gemm_check(sizes, options.faults)
    if "matmul" in wanted:
        subject.matmul = measure.matmul_throughput(sizes, options.faults,
                                                   progress=lambda f: say("sustained matmul rate", 0.1 + 0.2 * f))
    if "hbm" in wanted:
        subject.hbm = measure.hbm_bandwidth(sizes, options.faults,
                                            progress=lambda f: say("memory bandwidth", 0.3 + 0.3 * f))
    if "allreduce" in wanted:
        subject.allreduce = measure.all_reduce(sizes, progress=lambda f: say("all-reduce per mesh axis", 0.6 + 0.1 * f))
    again = {"matmul": lambda: measure.matmul_throughput(sizes, options.faults,
                                                         progress=lambda f: say("a second look: matmul rate", 0.7)),
             "hbm": lambda: measure.hbm_bandwidth(sizes, options.faults,
                                                  progress=lambda f: say("a second look: memory bandwidth", 0.7))}
    for name, measure_again in again.items():
        if getattr(subject, name, None) is not None:
            setattr(subject, name, second_look.settle(
                getattr(subject, name), measure_again,
                fits=lambda cost: time.perf_counter() - started + cost <= SECOND_LOOK_BUDGET_S))
    if "soak" in wanted:
        subject.soak = measure.matmul_throughput(sizes, options.faults, soak_s=sizes.soak_s,
                                                 progress=lambda f: say("soak", 0.7 + 0.25 * f))
    if "dcn" in wanted and options.distributed is not None:
        subject.dcn = measure.dcn_all_reduce(sizes, progress=lambda f: say("all-reduce across slices", 0.95 + 0.05 * f))
    return subject, sizes


def chip_rows(subject: DiagInput) -> list[dict]:
    rows = []
    matmul = stats.compare_peers(subject.matmul.frame, "tflops") if subject.matmul else None
    hbm = stats.compare_peers(subject.hbm.frame, "gbps") if subject.hbm else None
    for device in subject.inventory.devices:
        row: dict = {"chip": device.chip, "index": device.index, "kind": device.kind}
        if subject.gemm is not None:
            row["gemm_relative_error"] = float(subject.gemm.max_relative_error[device.index])
            majority = subject.gemm.digests.value_counts().index[0]
            row["gemm_bits_agree"] = bool(subject.gemm.digests[device.index] == majority)
        for name, table, unit in (("matmul", matmul, "tflops"), ("hbm", hbm, "gbps")):
            if table is not None and device.index in table.index:
                entry = table.loc[device.index]
                row.update({f"{name}_{unit}_median": float(entry[f"{unit}_median"]),
                            f"{name}_{unit}_p10": float(entry[f"{unit}_p10"]),
                            f"{name}_slowness": float(entry["slowness"]), f"{name}_margin": float(entry["margin"]),
                            # the peers' verdict (slowness beyond the margin); None with too few peers to tell
                            f"{name}_slow": None if entry["slow"] is None else bool(entry["slow"])})
        rows.append(row)
    return rows


def soak_rows(subject: DiagInput) -> list[dict] | None:
    if subject.soak is None:
        return None
    reps = int(subject.soak.frame.groupby("device").size().max())
    windows = stats.soak_windows(subject.soak.frame, stats.window_count(reps, subject.soak_windows))
    return [{"window": int(r.window), "chip": subject.chip(int(r.device)), "slowness": round(float(r.slowness), 4)}
            for r in windows.itertuples()]


def run(options: DiagOptions, *, node_findings: Sequence[Finding] = (), progress: Progress | None = None) -> DiagReport:
    from tpudoctor import __version__
    from tpudoctor.diag.rule import evaluate_rules
    from tpudoctor.families import load_rules

    started = time.perf_counter()
    subject, sizes = measure_level(options, progress)
    findings = evaluate_rules(subject, load_rules("diag-rules", disabled=options.disabled_plugins)) + list(node_findings)
    findings.sort(key=lambda f: (-f.status.rank, -f.severity.rank, f.id))
    allreduce = None
    if subject.allreduce is not None:
        medians = subject.allreduce.frame.groupby("axis")["bus_gbps"].median()
        allreduce = {"axes": subject.allreduce.axes, "bytes_per_device": subject.allreduce.bytes_per_device,
                     "bus_gbps_median": {a: float(v) for a, v in medians.items()}}
    dcn = None
    if subject.dcn is not None:
        dcn = {"across": subject.dcn.across, "groups": subject.dcn.axes["dcn"],
               "process_count": subject.dcn.process_count, "bytes_per_device": subject.dcn.bytes_per_device,
               "bus_gbps_median": float(subject.dcn.frame["bus_gbps"].median())}
    return DiagReport(level=options.level, host=subject.host, backend=subject.inventory.backend,
                      jax_version=subject.inventory.jax_version,
                      devices=[d.to_dict() for d in subject.inventory.devices], sizes=sizes.to_dict(),
                      chips=chip_rows(subject), allreduce=allreduce, dcn=dcn, soak=soak_rows(subject),
                      peaks=dataclasses.asdict(subject.peaks) if subject.peaks else None,
                      faults_injected=options.faults.describe(), findings=findings,
                      duration_s=time.perf_counter() - started, tool_version=__version__, worker=options.worker)
