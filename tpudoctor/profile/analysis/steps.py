"""Find the training steps of one host's capture, and say how they were found.

In order: the device ``Steps`` line (xprof's source), host step annotations
(``StepTraceAnnotation``/``Trace(step_num=)``, Keras train functions), and else pseudo-steps: the
repeated executions of the dominant XLA program (device ``XLA Modules``, host ``PjitFunction(f)``)
or TensorFlow function runs.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.events import (
    GPU_PLANE_PREFIX,
    HOST_PLANE,
    TPU_PLANE,
    column,
    device_cores,
    device_kind,
    end_ps,
    mask,
    name_matches,
    text_equals,
)
from tpudoctor.profile.analysis.nesting import outermost

METHOD_DEVICE_STEPS = "device-steps-line"
METHOD_HOST_ANNOTATIONS = "host-step-annotations"
METHOD_PSEUDO_MODULES = "pseudo-steps-xla-modules"
METHOD_PSEUDO_HOST = "pseudo-steps-host-program-runs"
METHOD_NONE = "none"

# xprof's explicit host step markers: names starting train/test/TraceContext (no '/'), plus
# Keras 3's per-step function.
KERAS_STEP_NAMES = r"^(?:train|test|TraceContext|multi_step_on_iterator|one_step_on_iterator|train_function)[^/]*$"
MODULE_NAME = re.compile(r"^(?P<name>.*)\((?P<program_id>\d+)\)$")


@dataclasses.dataclass
class StepSet:
    """Steps as a DataFrame: one row per (step, core).

    Columns: ``step_index`` (0..n-1), ``step_num`` (the framework's number where known), ``core``,
    ``start_ps``, ``end_ps``, ``duration_ps`` (start to next start: the step time), ``busy_ps``
    (the annotated work itself or program run; the rest of the step is the gap before the next).
    """

    method: str
    steps: pd.DataFrame
    program: str | None = None
    reason: str = ""

    @property
    def count(self) -> int:
        return int(self.steps["step_index"].nunique()) if not self.steps.empty else 0


EMPTY = pd.DataFrame(columns=["step_index", "step_num", "core", "start_ps", "end_ps", "duration_ps", "busy_ps"])


def find_steps(host) -> StepSet:
    for finder in (_device_steps_line, _host_annotations, _pseudo_from_modules, _pseudo_from_host_runs):
        found = finder(host)
        if found is not None and not found.steps.empty:
            return found
    return StepSet(METHOD_NONE, EMPTY.copy(), reason=(
        "no device Steps line, no host step annotation (StepTraceAnnotation/Trace(step_num=)) and no "
        "program that ran at least twice"))


def _device_steps_line(host) -> StepSet | None:
    ev = host.events
    sel = mask(ev["line_name"] == "Steps") & (name_matches(ev, TPU_PLANE.pattern, col="plane_name")
                                              | name_matches(ev, "^" + GPU_PLANE_PREFIX, col="plane_name"))
    if not sel.any():
        return None
    st = ev[sel]
    num = column(st, "step_num")
    num = num.where(num.notna(), column(st, "group_id"))
    num = num.where(num.notna(), pd.to_numeric(st["name"].astype(str), errors="coerce"))
    frame = pd.DataFrame({
        "step_num": num.astype("Int64").to_numpy(),
        "core": st["plane_name"].astype(str).to_numpy(),
        "start_ps": st["start_ps"].to_numpy(np.int64),
        "end_ps": end_ps(st),
    })
    frame["duration_ps"] = frame["end_ps"] - frame["start_ps"]
    frame["busy_ps"] = frame["duration_ps"]
    order = {n: i for i, n in enumerate(sorted(frame["step_num"].dropna().unique()))}
    frame["step_index"] = frame["step_num"].map(order)
    frame = frame.dropna(subset=["step_index"]).astype({"step_index": int})
    return StepSet(METHOD_DEVICE_STEPS, _ordered(frame))


def _host_annotations(host) -> StepSet | None:
    ev = host.events
    on_host = mask(ev["plane_name"] == HOST_PLANE)
    with_num = on_host & column(ev, "step_num").notna().to_numpy()
    with_num &= ~name_matches(ev, r"^\$")  # Python-tracer frames never carry step numbers
    if with_num.any():
        st = outermost(ev[with_num])
        # The most common annotation name is the step (others may be nested phases).
        top = st["name"].astype(str).value_counts().index[0]
        st = st[st["name"].astype(str) == top]
        nums = column(st, "step_num").astype("Int64").to_numpy()
    else:
        keras = on_host & name_matches(ev, KERAS_STEP_NAMES)
        if not keras.any():
            return None
        st = outermost(ev[keras])
        top = st["name"].astype(str).value_counts().index[0]
        st = st[st["name"].astype(str) == top]
        nums = np.arange(len(st))
    if len(st) < 1:
        return None
    return StepSet(METHOD_HOST_ANNOTATIONS, _chain(st["start_ps"].to_numpy(np.int64), end_ps(st), nums, "host"),
                   program=str(top))


def _pseudo_from_modules(host) -> StepSet | None:
    if device_kind(host) != "tpu":
        return None
    ev = host.events
    cores = device_cores(host)
    sel = mask(ev["line_name"] == "XLA Modules") & mask(ev["plane_name"].isin(cores))
    mods = ev.loc[sel, ["plane_name", "name", "start_ps", "duration_ps"]]  # the columns read here, not every stat
    if mods.empty:
        return None
    program = dominant_program(mods)
    if program is None:
        return None
    is_program = text_equals(mods["name"], program)
    frames = []
    for core in cores:
        runs = mods[mask(mods["plane_name"] == core) & is_program].sort_values("start_ps")
        if not runs.empty:
            frames.append(_chain(runs["start_ps"].to_numpy(np.int64), end_ps(runs), np.arange(len(runs)), core))
    if not frames:
        return None
    return StepSet(METHOD_PSEUDO_MODULES, pd.concat(frames, ignore_index=True), program=program,
                   reason="the capture has no Steps line: each run of the dominant XLA program is one step")


def _pseudo_from_host_runs(host) -> StepSet | None:
    ev = host.events
    on_host = mask(ev["plane_name"] == HOST_PLANE)
    for pattern in (r"^PjitFunction\(", r"^EagerLocalExecute: __inference_", r"^FunctionRun$"):
        sel = on_host & name_matches(ev, pattern)
        if not sel.any():
            continue
        runs = outermost(ev[sel])
        program = dominant_program(runs)
        if program is None:
            continue
        runs = runs[text_equals(runs["name"], program)].sort_values("start_ps")
        runs = runs[_not_nested_in_other_runs(runs)]
        return StepSet(METHOD_PSEUDO_HOST, _chain(runs["start_ps"].to_numpy(np.int64), end_ps(runs),
                                                  np.arange(len(runs)), "host"),
                       program=program,
                       reason="no step markers: each call of the dominant compiled function is one step")
    return None


def _not_nested_in_other_runs(runs: pd.DataFrame) -> np.ndarray:
    starts = runs["start_ps"].to_numpy(np.int64)
    ends = end_ps(runs)
    prev_max_end = np.r_[-1, np.maximum.accumulate(ends)[:-1]]
    return starts >= prev_max_end


def dominant_program(runs: pd.DataFrame) -> str | None:
    """The program that ran at least twice with the largest total time."""
    names = runs["name"]
    if isinstance(names.dtype, pd.CategoricalDtype):
        # grouped by category code, then labelled by text, as grouping the names as text would (which
        # leaves missing names out)
        codes = names.cat.codes.to_numpy()
        named = codes >= 0
        stats = runs["duration_ps"][named].groupby(codes[named]).agg(["count", "sum"])
        labels = names.cat.categories.astype(str).to_numpy(dtype=object)
        stats = stats.groupby(labels[stats.index.to_numpy()]).sum()
    else:
        stats = runs.groupby(names.astype(str), observed=True)["duration_ps"].agg(["count", "sum"])
    stats = stats[stats["count"] >= 2]
    if stats.empty:
        return None
    return str(stats["sum"].idxmax())


def _chain(starts: np.ndarray, ends: np.ndarray, nums, core: str) -> pd.DataFrame:
    """Steps from consecutive runs: a step lasts from its start to the next step's start."""
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    nums = np.asarray(nums)[order]
    step_end = np.r_[starts[1:], ends[-1:]] if len(starts) else starts
    step_end = np.maximum(step_end, ends)  # overlapping runs: a step never ends before its own work
    frame = pd.DataFrame({
        "step_index": np.arange(len(starts)),
        "step_num": pd.array(nums, dtype="Int64"),
        "core": core,
        "start_ps": starts,
        "end_ps": step_end,
    })
    frame["duration_ps"] = frame["end_ps"] - frame["start_ps"]
    frame["busy_ps"] = np.minimum(ends - starts, frame["duration_ps"].to_numpy())
    return frame


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["step_index", "core"], kind="stable").reset_index(drop=True)[
        ["step_index", "step_num", "core", "start_ps", "end_ps", "duration_ps", "busy_ps"]]


def step_time_stats(steps: StepSet) -> dict[str, float]:
    """Mean/median/p90/min/max/std of the step time (max over cores per step, as xprof), in ms."""
    if steps.steps.empty:
        return {}
    per_step = steps.steps.groupby("step_index")["duration_ps"].max().to_numpy(np.float64) / 1e9
    return {
        "count": int(len(per_step)),
        "mean_ms": float(per_step.mean()),
        "median_ms": float(np.median(per_step)),
        "p90_ms": float(np.percentile(per_step, 90)),
        "min_ms": float(per_step.min()),
        "max_ms": float(per_step.max()),
        "std_ms": float(per_step.std(ddof=1)) if len(per_step) > 1 else 0.0,
        "cv_percent": float(100 * per_step.std(ddof=1) / per_step.mean()) if len(per_step) > 1 and per_step.mean() > 0 else 0.0,
    }
