"""Where each step's time goes, and how much of it waits for input.

Two models:

* TPU (device steps or program-run pseudo-steps): xprof's per-step, per-core breakdown. Op self time
  per HLO category; TensorCore idle = step time minus op self time; infeed = self time of
  ``infeed``/``sparsecorev0 infeed`` ops; per step the step time is the maximum over cores, infeed the
  maximum, compute the minimum of (step - infeed - outfeed - host transfer - idle), idle what is left
  of the shortest core. Without infeed ops (JAX), host input time inside the step moves that much of
  the idle time to input (xprof's ``MayFixTpuStepAnalysis``). Copies to host memory space S(5)
  (host offload) are their own part, not compute: the device moves data then, as the host-offload
  rule counts them.
* Host-driven loops (CPU/GPU, host step annotations, or TPU steps found only on the host): the
  step's wall time split on one timeline, in priority order: compilation, host callbacks, device work,
  input (``IteratorGetNext``/tf.data, ``device_put``/H2D transfers, Python data-loading frames), and the
  rest (host Python overhead or idle).

Thresholds are xprof's: 5 % moderately, 20 % highly input-bound; TensorCore idle flagged at 3 %.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.device_op_rows import device_ops
from tpudoctor.profile.analysis.events import host_rows, module_rows, take
from tpudoctor.profile.analysis.grouping import Coded
from tpudoctor.profile.analysis.host_ops import is_host_offload_copy
from tpudoctor.profile.analysis.intervals import merged, overlap_ps
from tpudoctor.profile.analysis.nesting import outermost_rows
from tpudoctor.profile.analysis.steps import StepSet

MODERATELY_INPUT_BOUND_PERCENT = 5.0
HIGHLY_INPUT_BOUND_PERCENT = 20.0
TC_IDLE_PERCENT = 3.0

INFEED_CATEGORIES = {"infeed", "sparsecorev0 infeed"}
OUTFEED_CATEGORIES = {"outfeed", "sparsecorev0 outfeed"}
HOST_TRANSFER_CATEGORIES = {"host send", "host send-done", "host recv", "host recv-done"}
# Host events that mean "waiting for or moving the next batch" (xprof's HOST_WAIT_INPUT and
# HOST_TO_DEVICE, plus JAX's transfer events).
INPUT_EVENTS = (r"^(?:IteratorGetNext.*|EagerLocalExecute: IteratorGetNext.*|Iterator::.*|InfeedEnqueue.*|"
                r"MemcpyHToD|DevicePut.*|batched_copy_array_to_devices.*|tpu::System::TransferToDevice|"
                r"H2D Dispatch|TransferH2DRequest|TransferPreprocessedH2DRequest|"
                r"TfrtTpuClient::BufferFromHostBuffer.*|.*IteratorGetNextOp::DoCompute)$")
# Python-tracer frames of a data loader (only with the Python tracer on).
# The function name (after the "$file:line " prefix) has a data-loading word as one of its
# underscore-separated parts: load_batch, read_records, decode, get_next_batch, __next__...
PYTHON_INPUT_FRAMES = (r"^\$\S+ (?:\w*_)?(?:load|loader|batch|batches|data|dataset|dataloader|read|decode|augment|"
                       r"preprocess|sample|fetch|collate)(?:_\w*)?$|^\$\S+ (?:__next__|next)$")

BREAKDOWN_COLUMNS = ["step_index", "step_num", "step_ms", "compute_ms", "collective_ms", "input_ms", "idle_ms",
                     "compile_ms", "host_callback_ms", "host_offload_ms", "outfeed_ms", "host_transfer_ms",
                     "other_ms"]


@dataclasses.dataclass
class InputAnalysis:
    """``per_step``: ``BREAKDOWN_COLUMNS`` (ms per step; the parts add up to ``step_ms``).
    Percentages are of the summed step time. ``classification``: ``highly``/``moderately``/``not``
    input-bound or ``unknown`` (no steps). ``input_stages``: the largest input events by time."""

    model: str
    per_step: pd.DataFrame
    input_percent: float
    idle_percent: float
    compute_percent: float
    compile_percent: float
    host_callback_percent: float
    other_percent: float
    classification: str
    input_stages: pd.DataFrame
    gaps: pd.DataFrame
    percent: dict[str, float] = dataclasses.field(default_factory=dict)
    """Every part of the breakdown (``compute``, ``input``, ..., ``host_offload``, ``other``) in % of step time."""


def analyze_input(host, steps: StepSet, *, device: str, compile_intervals: pd.DataFrame,
                  callback_intervals: tuple[np.ndarray, np.ndarray]) -> InputAnalysis:
    if steps.steps.empty:
        return InputAnalysis("none", pd.DataFrame(columns=BREAKDOWN_COLUMNS), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                             "unknown", _empty_stages(), _empty_gaps(), {c[:-3]: 0.0 for c in BREAKDOWN_COLUMNS[3:]})
    inputs = _input_events(host)  # rows of host.events
    if device == "tpu" and steps.steps["core"].drop_duplicates().astype(str).str.startswith("/device:TPU:").any():
        per_step = _tpu_breakdown(host, steps, inputs)
        model = "tpu-step-breakdown"
    else:
        per_step = _host_breakdown(host, steps, inputs, compile_intervals, callback_intervals, device)
        model = "host-loop-timeline"
    return _summarized(model, per_step, _stages(host, inputs, steps), _gaps(host, steps, device))


def _summarized(model: str, per_step: pd.DataFrame, stages: pd.DataFrame, gaps: pd.DataFrame) -> InputAnalysis:
    """The analysis of a per-step breakdown: each part's share of the summed step time."""
    total = max(per_step["step_ms"].sum(), 1e-12)
    pct = {c: 100 * per_step[c].sum() / total for c in BREAKDOWN_COLUMNS[3:]}
    input_pct = pct["input_ms"]
    if input_pct >= HIGHLY_INPUT_BOUND_PERCENT:
        cls = "highly"
    elif input_pct >= MODERATELY_INPUT_BOUND_PERCENT:
        cls = "moderately"
    else:
        cls = "not"
    return InputAnalysis(
        model=model, per_step=per_step, input_percent=input_pct, idle_percent=pct["idle_ms"],
        compute_percent=pct["compute_ms"], compile_percent=pct["compile_ms"],
        host_callback_percent=pct["host_callback_ms"], other_percent=pct["other_ms"],
        classification=cls, input_stages=stages, gaps=gaps, percent={c[:-3]: v for c, v in pct.items()},
    )


def with_collective_part(analysis: InputAnalysis, collective_ms: pd.Series) -> InputAnalysis:
    """The breakdown with each step's collective time (``collective_ms``, by ``step_index``) moved out
    of compute into its own part: waiting for other hosts and moving data are not computing. Per
    step it takes at most the step's compute, and the shares are summed from the steps again, so
    the per-step table and the aggregate say the same."""
    if analysis.per_step.empty:
        return analysis
    per_step = analysis.per_step.copy()
    wanted = per_step["step_index"].map(collective_ms).fillna(0.0).to_numpy(np.float64)
    moved = np.clip(wanted, 0.0, per_step["compute_ms"].to_numpy(np.float64))
    per_step["collective_ms"] = per_step["collective_ms"].to_numpy(np.float64) + moved
    per_step["compute_ms"] = per_step["compute_ms"].to_numpy(np.float64) - moved
    return _summarized(analysis.model, per_step, analysis.input_stages, analysis.gaps)


def _input_events(host) -> np.ndarray:
    """Rows (in ``host.events``, by start) of the outermost host input events."""
    return outermost_rows(host, host_rows(host, f"(?:{INPUT_EVENTS})|(?:{PYTHON_INPUT_FRAMES})"))


def _tpu_breakdown(host, steps: StepSet, inputs: np.ndarray) -> pd.DataFrame:
    ops = device_ops(host)
    is_part, has_infeed_ops = _op_parts(ops)
    st = steps.steps
    out = _step_parts(ops, st, is_part)
    if not has_infeed_ops and len(inputs):
        _host_input_as_infeed(host, st, inputs, out)
    nums = st.groupby("step_index")["step_num"].first()
    # The max-core step can exceed the parts (which come from the shortest core): that is "other".
    other = np.maximum(out["step_ps"] - (out["compute_ps"] + out["infeed_ps"] + out["outfeed_ps"]
                                         + out["xfer_ps"] + out["offload_ps"] + out["idle_ps"]), 0)
    return pd.DataFrame({
        "step_index": out.index.to_numpy(), "step_num": nums.reindex(out.index).to_numpy(),
        "step_ms": out["step_ps"].to_numpy() / 1e9, "compute_ms": np.maximum(out["compute_ps"].to_numpy(), 0) / 1e9,
        "collective_ms": 0.0, "input_ms": out["infeed_ps"].to_numpy() / 1e9, "idle_ms": out["idle_ps"].to_numpy() / 1e9,
        "compile_ms": 0.0, "host_callback_ms": 0.0, "host_offload_ms": out["offload_ps"].to_numpy() / 1e9,
        "outfeed_ms": out["outfeed_ps"].to_numpy() / 1e9,
        "host_transfer_ms": out["xfer_ps"].to_numpy() / 1e9, "other_ms": other.to_numpy() / 1e9,
    })


def _op_parts(ops) -> tuple[dict[str, np.ndarray], bool]:
    """Which ops count as which part (masks by part column), and whether the device has infeed ops with time."""
    cat = ops.coded("hlo_category")
    is_infeed = cat.isin(INFEED_CATEGORIES)
    # Masks only: the time columns are made per core for that core's ops (never five float columns over all
    # the ops of a big capture at once).
    is_part = {
        "infeed_ps": is_infeed,
        "outfeed_ps": cat.isin(OUTFEED_CATEGORIES),
        "xfer_ps": cat.isin(HOST_TRANSFER_CATEGORIES),
        # Copies to host memory (S(5)) keep the device busy moving data, not computing: their own part,
        # counted exactly as the host-offload finding counts them.
        "offload_ps": is_host_offload_copy(ops.coded("name")) & ~is_infeed,
    }
    del cat
    return is_part, bool((is_infeed & (ops.self_ps > 0)).any())


def _step_parts(ops, st: pd.DataFrame, is_part: dict[str, np.ndarray]) -> pd.DataFrame:
    """Per step (index ``step_index``): its time and its parts in ps (compute, infeed, outfeed, xfer, offload,
    idle), the parts clamped so that they never exceed the step."""
    all_op_start = ops.start_ps
    # Reduced core by core into one row per step (a step table can have millions of rows: no table of
    # every core's step). xprof combines a step across cores first: every core's step lasts the longest
    # core's step, so a core that finished early shows the difference as idle.
    keys = np.unique(st["step_index"].to_numpy(np.int64))
    step_max = np.full(len(keys), -np.inf)
    np.maximum.at(step_max, np.searchsorted(keys, st["step_index"].to_numpy(np.int64)),
                  (st["end_ps"].to_numpy(np.int64) - st["start_ps"].to_numpy(np.int64)).astype(np.float64))
    compute = np.full(len(keys), np.inf)
    most = {col: np.full(len(keys), -np.inf) for col in ("infeed_ps", "xfer_ps", "offload_ps")}
    outfeed_sum = np.zeros(len(keys))
    count = np.zeros(len(keys), dtype=np.int64)
    for core, core_steps in st.groupby("core", sort=False):
        rows = np.flatnonzero(ops.core == ops.code_of_core(str(core)))
        core_steps = core_steps.sort_values("start_ps")
        starts = core_steps["start_ps"].to_numpy(np.int64)
        ends = core_steps["end_ps"].to_numpy(np.int64)
        op_start = all_op_start[rows]
        k = np.searchsorted(starts, op_start, side="right") - 1
        inside = (k >= 0) & (op_start < ends[np.clip(k, 0, None)])
        idx = k[inside]
        rows = rows[inside]
        own_ps = ops.self_ps[rows].astype(np.float64)
        sums = {"self_ps": np.bincount(idx, weights=own_ps, minlength=len(starts))}
        for col, is_col in is_part.items():
            sums[col] = np.bincount(idx, weights=np.where(is_col[rows], own_ps, 0.0), minlength=len(starts))
        del own_ps, rows, idx, k, inside, op_start
        at = np.searchsorted(keys, core_steps["step_index"].to_numpy(np.int64))
        step_ps = step_max[at]
        idle_ps = np.maximum(step_ps - sums["self_ps"], 0)
        optimal_ps = step_ps - (sums["infeed_ps"] + sums["outfeed_ps"] + sums["xfer_ps"] + sums["offload_ps"]
                                + idle_ps)
        np.minimum.at(compute, at, optimal_ps)
        for col, values in most.items():
            np.maximum.at(values, at, sums[col])
        np.add.at(outfeed_sum, at, sums["outfeed_ps"])
        np.add.at(count, at, 1)
        del sums, core_steps, step_ps, idle_ps, optimal_ps, at
    out = pd.DataFrame({
        "step_ps": step_max, "compute_ps": compute, "infeed_ps": most["infeed_ps"],
        "outfeed_ps": outfeed_sum / count, "xfer_ps": most["xfer_ps"], "offload_ps": most["offload_ps"],
    }, index=pd.Index(keys, name="step_index"))
    # A copy that starts in the step and runs past its end must not make the parts exceed the step.
    out["compute_ps"] = np.maximum(out["compute_ps"], 0)
    out["offload_ps"] = np.minimum(out["offload_ps"], np.maximum(
        out["step_ps"] - (out["compute_ps"] + out["infeed_ps"] + out["outfeed_ps"] + out["xfer_ps"]), 0))
    out["idle_ps"] = np.maximum(out["step_ps"] - (out["compute_ps"] + out["infeed_ps"] + out["outfeed_ps"]
                                                 + out["xfer_ps"] + out["offload_ps"]), 0)
    return out


def _host_input_as_infeed(host, st: pd.DataFrame, inputs: np.ndarray, out: pd.DataFrame) -> None:
    """JAX has no infeed op: host input time in the step turns that much idle into input (in ``out``)."""
    first = st.groupby("step_index")[["start_ps", "end_ps"]].agg({"start_ps": "min", "end_ps": "max"})
    input_start = take(host.events, "start_ps", inputs)
    host_input = overlap_ps(input_start, input_start + take(host.events, "duration_ps", inputs),
                            first["start_ps"].to_numpy(np.int64), first["end_ps"].to_numpy(np.int64))
    ratio = np.minimum(np.divide(host_input, out["idle_ps"].to_numpy(), out=np.zeros(len(out)),
                                 where=out["idle_ps"].to_numpy() > 0), 1.0)
    moved = out["idle_ps"].to_numpy() * ratio
    out["infeed_ps"] += moved
    out["idle_ps"] -= moved


def _host_breakdown(host, steps: StepSet, inputs: np.ndarray, compile_intervals: pd.DataFrame,
                    callback_intervals, device: str) -> pd.DataFrame:
    # One window per step: the core whose step took longest (cores of different workers need not
    # run a step at the same moment, so their union would be meaningless).
    longest = steps.steps.sort_values("duration_ps", ascending=False, kind="stable")
    st = longest.drop_duplicates("step_index").set_index("step_index").sort_index()
    ws, we = st["start_ps"].to_numpy(np.int64), st["end_ps"].to_numpy(np.int64)
    ops = device_ops(host)
    input_start = take(host.events, "start_ps", inputs)
    layers = [
        (compile_intervals["start_ps"].to_numpy(np.int64), compile_intervals["end_ps"].to_numpy(np.int64)),
        (np.asarray(callback_intervals[0], np.int64), np.asarray(callback_intervals[1], np.int64)),
        (ops.start_ps, ops.end_ps()),
        (input_start, input_start + take(host.events, "duration_ps", inputs)),
    ]
    covered = []
    acc_s, acc_e = np.array([], np.int64), np.array([], np.int64)
    for s, e in layers:
        acc_s, acc_e = np.r_[acc_s, s], np.r_[acc_e, e]
        covered.append(overlap_ps(acc_s, acc_e, ws, we).astype(np.float64))
    compile_ps = covered[0]
    callback_ps = covered[1] - covered[0]
    device_ps = covered[2] - covered[1]
    input_ps = covered[3] - covered[2]
    step_ps = (we - ws).astype(np.float64)
    rest = np.maximum(step_ps - covered[3], 0)
    return pd.DataFrame({
        "step_index": st.index.to_numpy(), "step_num": st["step_num"].to_numpy(),
        "step_ms": step_ps / 1e9, "compute_ms": device_ps / 1e9, "collective_ms": 0.0, "input_ms": input_ps / 1e9,
        "idle_ms": rest / 1e9, "compile_ms": compile_ps / 1e9, "host_callback_ms": callback_ps / 1e9,
        "host_offload_ms": 0.0, "outfeed_ms": 0.0, "host_transfer_ms": 0.0, "other_ms": 0.0,
    })


def _stages(host, inputs: np.ndarray, steps: StepSet) -> pd.DataFrame:
    """Input stages by total time inside the stepped part of the capture (largest first)."""
    if not len(inputs):
        return _empty_stages()
    ev = host.events
    lo, hi = steps.steps["start_ps"].min(), steps.steps["end_ps"].max()
    start = take(ev, "start_ps", inputs)
    inside = inputs[(start >= lo) & (start < hi)]
    ids, labels = Coded.of(ev, "name", inside).mapped(lambda name: name[1:] if name.startswith("$") else name)
    keep = ids >= 0
    durations = take(ev, "duration_ps", inside)[keep]
    ids = ids[keep]
    by_label = np.argsort(labels, kind="stable")  # a group-by of the texts sorts them
    counts = np.bincount(ids, minlength=len(labels))[by_label]
    sums = np.zeros(len(labels), np.int64)
    np.add.at(sums, ids, durations)
    present = counts > 0
    g = pd.DataFrame({"size": counts[present], "sum": sums[by_label][present]},
                     index=pd.Index(labels[by_label][present], dtype=object))
    g = g.sort_values("sum", ascending=False)
    return pd.DataFrame({"stage": g.index.astype(str), "count": g["size"].astype(int).to_numpy(),
                         "total_ms": g["sum"].to_numpy() / 1e9}).head(10)


def _gaps(host, steps: StepSet, device: str) -> pd.DataFrame:
    """The idle gaps on the device timeline (first core), largest first: ``start_ms`` from the core's
    first activity, ``duration_ms``; ``attrs["timeline_span_ms"]`` is the core's first-to-last span.
    On CPU the device is the set of XLA/TF op executions."""
    ops = device_ops(host)
    if ops.empty:
        return _empty_gaps()
    core = str(ops.core_names[ops.core[0]])
    s = e = None
    if device == "tpu":
        mods = module_rows(host, core)
        if len(mods):
            start = take(host.events, "start_ps", mods)
            s, e = merged(start, start + take(host.events, "duration_ps", mods))
    if s is None:
        on_core = ops.core == ops.core[0]
        s, e = merged(ops.start_ps[on_core], ops.end_ps(on_core))
    if len(s) < 2:
        return _empty_gaps()
    origin = int(s[0])  # the device timeline: first to last device activity of this core
    gs, ge = e[:-1], s[1:]
    frame = pd.DataFrame({"start_ms": (gs - origin) / 1e9, "duration_ms": (ge - gs) / 1e9})
    frame.attrs["timeline_span_ms"] = (int(e[-1]) - origin) / 1e9
    top = frame.sort_values("duration_ms", ascending=False).head(50).reset_index(drop=True)
    top.attrs["timeline_span_ms"] = frame.attrs["timeline_span_ms"]
    return top


def _empty_stages() -> pd.DataFrame:
    return pd.DataFrame(columns=["stage", "count", "total_ms"])


def _empty_gaps() -> pd.DataFrame:
    return pd.DataFrame(columns=["start_ms", "duration_ms"])
