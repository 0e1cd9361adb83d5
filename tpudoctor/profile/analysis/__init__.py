"""Analyses that answer "why is my TPU job slow", over one loaded host.

    from tpudoctor.profile.analysis import analyze_loaded
    a = analyze_loaded(host)                  # HostAnalysis: DataFrames, units in column names
    a.input.per_step, a.recompilation.functions

One module per analysis: ``steps``, ``input_bound``, ``host_ops``, ``recompilation``,
``device_ops``, ``programs``, ``roofline``, ``collectives`` (per host) and ``cross_host`` (the combine step's),
``hosts``. All return data. They share ``events`` (selecting events), ``device_op_rows`` (a host's
device ops, selected once), ``grouping`` (codes and group sums), ``nesting`` (self time, outermost
events) and ``intervals`` (unions of time spans). ``tpudoctor.profile.pipeline`` turns a host's
analysis into the small ``HostResult`` of the per-host map; rules (``tpudoctor.profile.rules``) judge it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.collectives import HostCollectives, host_collectives
from tpudoctor.profile.analysis.device_op_rows import sharing_device_ops
from tpudoctor.profile.analysis.device_ops import DeviceOps, analyze_device_ops
from tpudoctor.profile.analysis.events import capture_window_ps, device_kind, name_matches
from tpudoctor.profile.analysis.host_ops import HostOps, analyze_host_ops
from tpudoctor.profile.analysis.input_bound import (
    InputAnalysis,
    analyze_input,
    with_collective_part,
)
from tpudoctor.profile.analysis.programs import program_table
from tpudoctor.profile.analysis.recompilation import Recompilation, analyze_recompilation
from tpudoctor.profile.analysis.steps import StepSet, find_steps, step_time_stats

__all__ = ["analyze_loaded", "HostAnalysis"]


@dataclasses.dataclass
class HostAnalysis:
    host: str
    framework: str
    window_ms: float
    steps: StepSet
    step_stats: dict
    input: InputAnalysis
    recompilation: Recompilation
    host_ops: HostOps
    device: DeviceOps
    device_kind: str = "cpu"
    collectives: HostCollectives | None = None  # the cross-host analysis' per-host part


def analyze_loaded(host, name: str | None = None) -> HostAnalysis:
    """Every analysis over one loaded ``HostProfile`` (its events in this process)."""
    with sharing_device_ops(host):
        return _analyze(host, name)


def _analyze(host, name: str | None) -> HostAnalysis:
    window = capture_window_ps(host)
    kind = device_kind(host)
    programs = program_table(host)
    steps = find_steps(host, programs)
    recompilation = analyze_recompilation(host, window)
    host_ops = analyze_host_ops(host, window)
    inp = analyze_input(host, steps, device=kind, compile_intervals=recompilation.intervals,
                        callback_intervals=host_ops.callback_intervals)
    host_name = name or getattr(host, "hostname", "host")
    collectives = host_collectives(host, steps, host_name)
    per_step = collectives.per_step
    if not per_step.empty:  # collective time (waiting for other hosts and transfer) is not compute
        inp = with_collective_part(inp, pd.Series(per_step["collective_ns"].to_numpy(np.float64) / 1e6,
                                                  index=per_step["step_index"].to_numpy(np.int64)))
    return HostAnalysis(
        host=host_name, framework=_framework(host),
        window_ms=(window[1] - window[0]) / 1e9, steps=steps, step_stats=step_time_stats(steps), input=inp,
        recompilation=recompilation, host_ops=host_ops, device=analyze_device_ops(host, programs=programs),
        device_kind=kind,
        collectives=collectives,
    )


def _framework(host) -> str:
    ev = host.events
    if name_matches(ev, r"^(?:PjitFunction\(|backend_compile|ExecuteReplicated)").any():
        return "jax"
    if name_matches(ev, r"^(?:EagerExecute|FunctionRun|ExecutorState::Process|IteratorGetNextOp::DoCompute)$").any():
        return "tensorflow"
    return "unknown"
