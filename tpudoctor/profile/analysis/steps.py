"""Find the training steps of one host's capture, and say how they were found.

In order: the device ``Steps`` line (xprof's source), host step annotations
(``StepTraceAnnotation``/``Trace(step_num=)``, Keras train functions), and else pseudo-steps: the
repeated executions of the program with the most device time (device ``XLA Modules``, host
``PjitFunction(f)``) or TensorFlow function runs.

Pseudo-steps are a guess that the capture is a training loop. They are kept only where the runs
look like one (``check_loop``): one program holds most of the device time, it ran at least
``MIN_STEPS`` times, what runs between two of its runs repeats, and it runs at a steady period.
Otherwise the capture is a micro-benchmark (programs timed a few times each, or interleaved with
no repeating step): no steps, and it says why (``StepSet.micro_benchmark``).
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
    line_rows,
    mask,
    name_matches,
    plane_lines,
    text_equals,
)
from tpudoctor.profile.analysis.evidence import MIN_STEPS
from tpudoctor.profile.analysis.nesting import outermost_rows
from tpudoctor.profile.analysis.programs import (
    device_ms_by_key,
    program_key,
    program_table,
)

METHOD_DEVICE_STEPS = "device-steps-line"
METHOD_HOST_ANNOTATIONS = "host-step-annotations"
METHOD_PSEUDO_MODULES = "pseudo-steps-xla-modules"
METHOD_PSEUDO_HOST = "pseudo-steps-host-program-runs"
METHOD_NONE = "none"

# xprof's explicit host step markers: names starting train/test/TraceContext (no '/'), plus
# Keras 3's per-step function.
KERAS_STEP_NAMES = r"^(?:train|test|TraceContext|multi_step_on_iterator|one_step_on_iterator|train_function)[^/]*$"
PSEUDO_METHODS = (METHOD_PSEUDO_MODULES, METHOD_PSEUDO_HOST)
MARKER_METHODS = (METHOD_DEVICE_STEPS, METHOD_HOST_ANNOTATIONS)

# What pseudo-steps need to be taken for a training loop (``check_loop``).
LOOP_PROGRAM_SHARE_PERCENT = 50.0
"""One program holds at least this share of the HLO op device time: the step."""
LOOP_REPEAT_PERCENT = 75.0
"""What runs between two runs of the step is the same in at least this share of the gaps."""
LOOP_PERIOD_CV_PERCENT = 50.0
"""The step's runs start at a steady period: the coefficient of variation of the time between two
starts stays below this (a checkpoint or a data stall makes a few steps slow, not half of them)."""
MICRO_BENCHMARK = "micro-benchmark: no training loop"


@dataclasses.dataclass
class StepSet:
    """Steps as a DataFrame: one row per (step, core).

    Columns: ``step_index`` (0..n-1), ``step_num`` (the framework's number where known), ``core``,
    ``start_ps``, ``end_ps``, ``duration_ps`` (start to next start: the step time), ``busy_ps``
    (the annotated work itself or program run; the rest of the step is the gap before the next).
    ``micro_benchmark``: no step markers and the program runs are not a training loop (``reason``
    says why; ``program`` is the program with the most device time); there are no steps then.
    ``loop``: the figures ``check_loop`` judged pseudo-steps by.
    """

    method: str
    steps: pd.DataFrame
    program: str | None = None
    reason: str = ""
    micro_benchmark: bool = False
    loop: dict = dataclasses.field(default_factory=dict)

    @property
    def count(self) -> int:
        return int(self.steps["step_index"].nunique()) if not self.steps.empty else 0


@dataclasses.dataclass(frozen=True)
class LoopCheck:
    """Whether a program's runs look like a training loop, why not, and the figures."""

    training_loop: bool
    reason: str
    figures: dict


def check_loop(names: np.ndarray, starts_ps: np.ndarray, program: str, programs: pd.DataFrame) -> LoopCheck:
    """Do the runs of ``program`` form a training loop? ``names``/``starts_ps``: every program run of
    the kind pseudo-steps come from, in time order; ``programs``: the host's ``program_table``."""
    figures: dict = {"program": program}
    if not programs.empty:
        top = programs.iloc[0]
        figures["top_program"], figures["top_program_share_percent"] = str(top["program"]), float(top["share_percent"])
        if top["share_percent"] < LOOP_PROGRAM_SHARE_PERCENT:
            return LoopCheck(False, f"no program holds most of the device time (the largest, {top['program']}, has "
                                    f"{top['share_percent']:.1f}% of {len(programs)} programs' time; a training step "
                                    f"holds at least {LOOP_PROGRAM_SHARE_PERCENT:.0f}%)", figures)
    names = np.asarray(names, dtype=object)
    mine = np.flatnonzero(names == program)
    figures["runs"] = len(mine)
    if len(mine) < MIN_STEPS:
        return LoopCheck(False, f"{program} ran {len(mine)} time(s): a training loop repeats its step at least "
                                f"{MIN_STEPS} times", figures)
    n_gaps = len(mine) - 1
    common = _most_common_gap(names, mine)
    figures["repeating_gaps"], figures["gaps"] = int(common), n_gaps
    if n_gaps and 100 * common / n_gaps < LOOP_REPEAT_PERCENT:
        return LoopCheck(False, f"other programs interleave with {program} with no repeating step (the same programs "
                                f"run between two of its runs in {common} of {n_gaps} gaps)", figures)
    period_ms = np.diff(np.sort(np.asarray(starts_ps, np.int64)[mine])) / 1e9
    cv = float(100 * period_ms.std(ddof=1) / period_ms.mean()) if len(period_ms) > 1 and period_ms.mean() > 0 else 0.0
    figures["period_cv_percent"] = round(cv, 1)
    if cv >= LOOP_PERIOD_CV_PERCENT:
        return LoopCheck(False, f"{program} runs at no steady period ({len(mine)} runs, {period_ms.min():.3g} to "
                                f"{period_ms.max():.3g} ms apart: coefficient of variation {cv:.0f}%, a loop stays "
                                f"below {LOOP_PERIOD_CV_PERCENT:.0f}%)", figures)
    return LoopCheck(True, f"{program} repeats {len(mine)} times at a steady period (coefficient of variation "
                           f"{cv:.0f}%)", figures)


MAX_GAP_WIDTH = 64
"""Gaps of up to this many runs are compared as rows of a table; longer ones one by one."""


def _most_common_gap(names: np.ndarray, mine: np.ndarray) -> int:
    """How many of the gaps between consecutive runs at ``mine`` (positions in ``names``) hold the same
    other runs (as a multiset of names) as the most common gap does; 0 without gaps. Each gap of up to
    ``MAX_GAP_WIDTH`` runs is a row of its names' codes, sorted, so that equal gaps are equal rows (no
    Python tuple per gap); the few longer ones are compared as tuples (a gap of another length never
    equals them)."""
    n_gaps = len(mine) - 1
    if n_gaps < 1:
        return 0
    widths = mine[1:] - mine[:-1] - 1
    short = widths <= MAX_GAP_WIDTH
    counts = [pd.Series([tuple(sorted(str(n) for n in names[mine[g] + 1:mine[g + 1]])) for g in np.flatnonzero(~short)],
                        dtype=object).value_counts().max() if not short.all() else 0]
    if short.any():
        width = int(widths[short].max())
        if width == 0:
            counts.append(int(short.sum()))  # the short gaps are all empty
        else:
            codes = pd.factorize(np.array([str(n) for n in names], dtype=object))[0]
            between = np.ones(int(mine[-1]) - int(mine[0]) - 1, bool)  # after the first run, before the last
            between[mine[1:-1] - mine[0] - 1] = False  # the runs themselves
            position = np.flatnonzero(between) + mine[0] + 1
            gap = np.searchsorted(mine, position) - 1
            keep = short[gap]
            position, gap = position[keep], (np.cumsum(short) - 1)[gap[keep]]  # short gaps numbered on their own
            order = np.lexsort((codes[position], gap))
            position, gap = position[order], gap[order]
            table = np.full((int(short.sum()), width), -1, np.int64)
            table[gap, np.arange(len(gap)) - np.searchsorted(gap, gap)] = codes[position]
            counts.append(int(np.unique(table, axis=0, return_counts=True)[1].max()))
    return int(max(counts))


EMPTY = pd.DataFrame(columns=["step_index", "step_num", "core", "start_ps", "end_ps", "duration_ps", "busy_ps"])


def find_steps(host, programs: pd.DataFrame | None = None) -> StepSet:
    """``programs``: the host's ``program_table`` where already made (pseudo-steps read it)."""
    for finder in (_device_steps_line, _host_annotations):
        found = finder(host)
        if found is not None and not found.steps.empty:
            return found
    programs = program_table(host) if programs is None else programs
    for finder in (_pseudo_from_modules, _pseudo_from_host_runs):
        found = finder(host, programs)
        if found is not None and (found.micro_benchmark or not found.steps.empty):
            return found
    return StepSet(METHOD_NONE, EMPTY.copy(), reason=(
        "no device Steps line, no host step annotation (StepTraceAnnotation/Trace(step_num=)) and no "
        "program that ran at least twice"))


def _judged(method: str, frames: list[pd.DataFrame], program: str, reason: str, check: LoopCheck) -> StepSet:
    """Pseudo-steps where the runs form a training loop; else no steps: a micro-benchmark."""
    if not check.training_loop:
        return StepSet(METHOD_NONE, EMPTY.copy(), program=program, reason=f"{MICRO_BENCHMARK}: {check.reason}",
                       micro_benchmark=True, loop={"training_loop": False, **check.figures})
    return StepSet(method, pd.concat(frames, ignore_index=True), program=program, reason=reason,
                   loop={"training_loop": True, **check.figures})


def _device_steps_line(host) -> StepSet | None:
    ev = host.events
    rows = line_rows(host, "Steps", lambda plane: re.search(TPU_PLANE.pattern, plane) is not None
                     or re.search("^" + GPU_PLANE_PREFIX, plane) is not None)
    if not len(rows):
        return None
    st = ev.iloc[rows]
    # the loader keeps each label stat in the narrowest type its own values need: widen before mixing them
    num = column(st, "step_num").astype("Int64")
    num = num.where(num.notna(), column(st, "group_id").astype("Int64"))
    num = num.where(num.notna(), pd.to_numeric(st["name"].astype(str), errors="coerce"))
    frame = pd.DataFrame({
        "step_num": num.astype("Int64").to_numpy(),
        "core": pd.Series(host.line_values("plane_name", rows)).astype(str).to_numpy(),
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
    on_host = host.on_lines(plane_lines(host, HOST_PLANE.__eq__))
    with_num = on_host & ~np.asarray(pd.isna(column(ev, "step_num").array), bool)  # the mask, not a Series op
    with_num &= ~name_matches(ev, r"^\$")  # Python-tracer frames never carry step numbers
    if with_num.any():
        st = ev.iloc[outermost_rows(host, np.flatnonzero(with_num))]
        # The most common annotation name is the step (others may be nested phases).
        top = st["name"].astype(str).value_counts().index[0]
        st = st[st["name"].astype(str) == top]
        nums = column(st, "step_num").astype("Int64").to_numpy()
    else:
        keras = on_host & name_matches(ev, KERAS_STEP_NAMES)
        if not keras.any():
            return None
        st = ev.iloc[outermost_rows(host, np.flatnonzero(keras))]
        top = st["name"].astype(str).value_counts().index[0]
        st = st[st["name"].astype(str) == top]
        nums = np.arange(len(st))
    if len(st) < 1:
        return None
    return StepSet(METHOD_HOST_ANNOTATIONS, _chain(st["start_ps"].to_numpy(np.int64), end_ps(st), nums, "host"),
                   program=str(top))


def _pseudo_from_modules(host, programs: pd.DataFrame) -> StepSet | None:
    if device_kind(host) != "tpu":
        return None
    ev = host.events
    cores = device_cores(host)
    rows = line_rows(host, "XLA Modules", set(cores).__contains__)
    mods = ev[["name", "start_ps", "duration_ps"]].iloc[rows]  # the columns read here, not every stat
    mods.insert(0, "plane_name", host.line_values("plane_name", rows))
    if mods.empty:
        return None
    program = dominant_program(mods)  # module events are device time already
    if program is None:
        return None
    is_program = text_equals(mods["name"], program)
    frames = []
    busiest = None
    for core in cores:
        runs = mods[mask(mods["plane_name"] == core) & is_program].sort_values("start_ps")
        if not runs.empty:
            frames.append(_chain(runs["start_ps"].to_numpy(np.int64), end_ps(runs), np.arange(len(runs)), core))
            if busiest is None or len(runs) > busiest[1]:
                busiest = (core, len(runs))
    if not frames:
        return None
    on_core = mods[mask(mods["plane_name"] == busiest[0])].sort_values("start_ps", kind="stable")
    check = check_loop(on_core["name"].astype(str).to_numpy(dtype=object), on_core["start_ps"].to_numpy(np.int64),
                       program, programs)
    return _judged(METHOD_PSEUDO_MODULES, frames, program,
                   "the capture has no Steps line: each run of the XLA program with the most device time is one step",
                   check)


def _pseudo_from_host_runs(host, programs: pd.DataFrame) -> StepSet | None:
    ev = host.events
    on_host = host.on_lines(plane_lines(host, HOST_PLANE.__eq__))
    for pattern in (r"^PjitFunction\(", r"^EagerLocalExecute: __inference_", r"^FunctionRun$"):
        sel = on_host & name_matches(ev, pattern)
        if not sel.any():
            continue
        runs = ev.iloc[outermost_rows(host, np.flatnonzero(sel))]
        program, by = _program_by_device_time(runs, programs)
        if program is None:
            continue
        runs = runs.sort_values("start_ps", kind="stable")
        runs = runs[_not_nested_in_other_runs(runs)]
        names = runs["name"].astype(str).to_numpy(dtype=object)
        starts = runs["start_ps"].to_numpy(np.int64)
        own = runs[text_equals(runs["name"], program)]
        frame = _chain(own["start_ps"].to_numpy(np.int64), end_ps(own), np.arange(len(own)), "host")
        return _judged(METHOD_PSEUDO_HOST, [frame], program,
                       f"no step markers: each call of the compiled function with the most {by} is one step",
                       check_loop(names, starts, program, programs))
    return None


def _program_by_device_time(runs: pd.DataFrame, programs: pd.DataFrame) -> tuple[str | None, str]:
    """The function called at least twice whose programs hold the most device time (recompiled
    variants of one function summed), and "device time"; where no function's programs are in the
    capture's device ops (TensorFlow functions, a host-only capture), the one with the most host
    time, and "host time"."""
    names = runs["name"].astype(str)
    counts = names.value_counts()
    repeated = [str(n) for n in counts.index if counts[n] >= 2]
    if not repeated:
        return None, ""
    device_ms = device_ms_by_key(programs) if not programs.empty else {}
    on_device = {n: device_ms[_function_key(n)] for n in repeated if _function_key(n) in device_ms}
    if on_device:
        return max(sorted(on_device), key=lambda n: on_device[n]), "device time"
    return dominant_program(runs), "host time"


def _function_key(name: str) -> str:
    """``PjitFunction(train_step)`` -> the ``program_key`` of ``train_step``."""
    inner = re.match(r"^PjitFunction\((?P<f>.*)\)$", name)
    return program_key(inner.group("f") if inner else name)


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
