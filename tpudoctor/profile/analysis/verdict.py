"""Findings (stable ids, evidence, fixes) and the one-word verdict of a host's analysis.

Returns data only; renderers write the words around it. Thresholds are xprof's where xprof has one
(input 5/20 %, TensorCore idle 3 %, outside compilation 5 %, eager 10 %, expensive tf.function 20 %).
"""

from __future__ import annotations

import dataclasses

from tpudoctor.profile.analysis.input_bound import (
    HIGHLY_INPUT_BOUND_PERCENT,
    MODERATELY_INPUT_BOUND_PERCENT,
    TC_IDLE_PERCENT,
)

VERDICTS = ("input-bound", "host-bound", "compile-bound", "communication-bound", "device-bound", "unknown")
BOUND_PERCENT = 20.0           # a cause that takes this share of step time is "the" bottleneck
COMPILE_FINDING_PERCENT = 5.0
HOST_OFFLOAD_PERCENT = 20.0
CALLBACK_PERCENT = 5.0
OUTSIDE_COMPILATION_PERCENT = 5.0
EAGER_PERCENT = 10.0
HOST_TRANSFER_PERCENT = 10.0
STEP_CV_PERCENT = 20.0

TF_DATA_FIXES = [
    "Add .prefetch(tf.data.AUTOTUNE) as the last step of the tf.data pipeline",
    "Parallelise preprocessing: .map(fn, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)",
    "Read files in parallel: .interleave(tf.data.TFRecordDataset, num_parallel_calls=tf.data.AUTOTUNE)",
    "Cache decoded data that fits in memory with .cache(); store inputs as TFRecord shards, not many small files",
    "Move Python preprocessing (tf.numpy_function/py_function) into TensorFlow ops, or preprocess offline",
]
JAX_INPUT_FIXES = [
    "Prefetch batches to the device: keep 2 batches in flight (e.g. flax.jax_utils.prefetch_to_device or a "
    "background thread calling jax.device_put)",
    "Load data with worker processes (grain, tf.data with .prefetch, or a multiprocessing loader) instead of "
    "Python in the training loop",
    "Do heavy preprocessing offline or inside the jitted step on the device",
]


@dataclasses.dataclass
class Finding:
    id: str
    severity: str  # high | medium | low | info
    title: str
    summary: str
    evidence: dict
    fixes: list[str]


def build_findings(r) -> list[Finding]:
    """``r`` is a ``HostAnalysis``. Ordered most severe first."""
    out: list[Finding] = []
    inp, steps = r.input, r.steps
    framework = r.framework
    if steps.method in ("pseudo-steps-xla-modules", "pseudo-steps-host-program-runs"):
        out.append(Finding(
            "no-step-markers", "info", "No step markers: steps taken from repeated program runs",
            f"The capture has no Steps line or step annotation; each run of {steps.program} counts as one step "
            f"({steps.count} steps).",
            {"method": steps.method, "program": steps.program, "steps": steps.count},
            ["JAX: wrap each step in `with jax.profiler.StepTraceAnnotation('train', step_num=i):`",
             "TensorFlow: `with tf.profiler.experimental.Trace('train', step_num=i, _r=1):`, or use Keras fit"]))
    if inp.classification in ("highly", "moderately"):
        stage = inp.input_stages.iloc[0]["stage"] if not inp.input_stages.empty else None
        word = "HIGHLY" if inp.classification == "highly" else "MODERATELY"
        out.append(Finding(
            "input-bound", "high" if inp.classification == "highly" else "medium",
            f"{word} input-bound: {inp.input_percent:.1f}% of step time waits for input",
            f"Your program is {word} input-bound because {inp.input_percent:.1f}% of the total step time sampled "
            "is waiting for input." + (f" Largest input stage: {stage}." if stage else ""),
            {"input_percent": round(inp.input_percent, 2), "classification": inp.classification,
             "largest_input_stage": stage, "input_stages": _records(inp.input_stages, 5),
             "thresholds_percent": {"moderately": MODERATELY_INPUT_BOUND_PERCENT, "highly": HIGHLY_INPUT_BOUND_PERCENT}},
            TF_DATA_FIXES if framework == "tensorflow" else JAX_INPUT_FIXES + TF_DATA_FIXES[:1]))
    idle_pct = inp.idle_percent
    if inp.model == "tpu-step-breakdown" and idle_pct >= TC_IDLE_PERCENT:
        out.append(Finding(
            "device-idle", "high" if idle_pct >= BOUND_PERCENT else "medium",
            f"TensorCore idle {idle_pct:.1f}% of step time",
            f"{idle_pct:.1f} % of the total step time sampled is due to host overhead that is not input-related "
            "(the TensorCores wait between programs).",
            {"idle_percent": round(idle_pct, 2), "largest_gaps_ms": [round(x, 3) for x in inp.gaps["duration_ms"].head(5)]},
            ["Run several steps per host call (TF: steps_per_execution / a host training loop in one tf.function; "
             "JAX: jax.lax.scan or fori_loop over micro-steps)",
             "Avoid per-step host syncs: jax.device_get/np.asarray/.item()/block_until_ready inside the loop"]))
    elif inp.model == "host-loop-timeline" and idle_pct >= BOUND_PERCENT:
        out.append(Finding(
            "host-overhead", "high", f"Host overhead: {idle_pct:.1f}% of step time has neither device work nor input",
            "The training loop spends this share of each step in host Python (dispatch, logging, syncs) "
            "while the device waits.",
            {"host_other_percent": round(idle_pct, 2)},
            ["Move per-step Python (logging, metric conversion, checkpoint checks) out of the step or do it every N steps",
             "Avoid per-step host syncs (np.asarray, .item(), block_until_ready)",
             "Fuse several steps per call (jax.lax.scan, steps_per_execution)"]))
    rc = r.recompilation
    if rc.total_compile_count:
        repeated = rc.functions[rc.functions["compile_count"] >= 2]
        share = max(rc.share_of_capture_percent, inp.compile_percent)
        is_re = not repeated.empty
        sev = "high" if share >= BOUND_PERCENT else ("medium" if is_re or share >= COMPILE_FINDING_PERCENT else "info")
        names = ", ".join(f"{f} x{c}" for f, c in zip(rc.functions["function"], rc.functions["compile_count"], strict=True))
        out.append(Finding(
            "recompilation" if is_re else "compilation-in-window", sev,
            (f"Recompilation: {int(repeated['compile_count'].sum())} compiles of {len(repeated)} function(s) in the window"
             if is_re else f"{rc.total_compile_count} compilation(s) inside the capture window"),
            f"{rc.total_compile_count} compilations ({names}) took {rc.total_compile_ms:.1f} ms, "
            f"{rc.share_of_capture_percent:.1f}% of the capture window.",
            {"compile_count": rc.total_compile_count, "compile_ms": round(rc.total_compile_ms, 3),
             "share_of_capture_percent": round(rc.share_of_capture_percent, 2),
             "functions": _records(rc.functions, 20), "program_cache_misses": rc.program_cache_misses,
             "programs_in_metadata": rc.programs_in_metadata, "tf_tracing_count_max": rc.tf_tracing_count_max},
            (_recompile_fixes(framework) if is_re else
             ["Warm up (run one step) before starting the trace so the capture shows steady state"])))
    ho = r.host_ops
    if ho.host_offload_share_of_device_percent >= HOST_OFFLOAD_PERCENT:
        top = ho.table[ho.table["kind"] == "host-offload-copy"]
        out.append(Finding(
            "host-offload", "high",
            f"Host-offload copies take {ho.host_offload_share_of_device_percent:.1f}% of device time",
            f"copy-start/copy-done to host memory space S(5) take {ho.host_offload_device_ms / 1e3:.2f} s of "
            f"{ho.device_busy_ms / 1e3:.2f} s device op time: the device mostly moves data over PCIe.",
            {"host_offload_device_ms": round(ho.host_offload_device_ms, 3), "device_op_ms": round(ho.device_busy_ms, 3),
             "share_of_device_percent": round(ho.host_offload_share_of_device_percent, 2),
             "top_copies": _records(top, 8)},
            ["Offload fewer tensors (keep activations that fit in HBM on the device; prefer rematerialisation, "
             "jax.checkpoint, over offloading when compute is cheap)",
             "Overlap offload copies with compute (schedule copy-start early, copy-done late)",
             "Use a larger batch per copy or a TPU with more HBM so the working set fits on the device"]))
    step_total_ms = max(float(inp.per_step["step_ms"].sum()) if not inp.per_step.empty else 0.0, 1e-9)
    cb_pct = max(inp.host_callback_percent, 100 * ho.callback_ms / step_total_ms if not inp.per_step.empty else 0)
    if cb_pct >= CALLBACK_PERCENT:
        cbs = ho.table[ho.table["kind"] == "host-callback"]
        out.append(Finding(
            "host-callback", "high" if cb_pct >= BOUND_PERCENT else "medium",
            f"Host callbacks take {cb_pct:.1f}% of step time",
            "The device stops and waits while Python runs inside the step (jax.debug.print, pure_callback, io_callback).",
            {"callback_percent": round(cb_pct, 2), "callback_ms": round(ho.callback_ms, 3), "callbacks": _records(cbs, 8)},
            ["Remove jax.debug.print / callbacks from the hot step, or run them every N steps under lax.cond",
             "Return metrics from the step and log them on the host asynchronously (every N steps)",
             "If a callback is needed, make it cheap and use io_callback(..., ordered=False)"]))
    if ho.outside_compilation_share_of_device_percent >= OUTSIDE_COMPILATION_PERCENT:
        out.append(Finding(
            "outside-compilation", "medium",
            f"{ho.outside_compilation_share_of_device_percent:.1f} % of op time on the device is outside compilation",
            f"{ho.outside_compilation_share_of_device_percent:.1f} % of Op time on the device are for outside compilation. "
            "Performance could be improved by avoiding outside compilation.",
            {"share_of_device_percent": round(ho.outside_compilation_share_of_device_percent, 2)},
            ["Replace ops that TPUs cannot run (strings, py_function, summaries) inside the step"]))
    window_ms = r.window_ms
    transfer_pct = 100 * ho.host_transfer_ms / max(window_ms, 1e-9)
    if transfer_pct >= HOST_TRANSFER_PERCENT:
        tr = ho.table[ho.table["kind"] == "host-transfer"]
        out.append(Finding(
            "host-transfers", "medium", f"Host/device transfers run {transfer_pct:.1f}% of the capture",
            f"Transfer events (H2D/D2H, DMA mapping, np.asarray) cover {ho.host_transfer_ms / 1e3:.2f} s.",
            {"host_transfer_ms": round(ho.host_transfer_ms, 3), "share_of_capture_percent": round(transfer_pct, 2),
             "transfers": _records(tr, 8)},
            ["Fetch results to the host less often (every N steps), and asynchronously (copy_to_host_async)",
             "Keep data on the device between steps; donate buffers (donate_argnums) to avoid copies"]))
    eager_pct = 100 * ho.eager_ms / max(window_ms, 1e-9)
    if eager_pct >= EAGER_PERCENT:
        out.append(Finding(
            "eager-execution", "high" if eager_pct >= BOUND_PERCENT else "medium",
            f"{eager_pct:.1f}% of the capture runs TensorFlow ops eagerly",
            f"{eager_pct:.1f}% of Op time on the host used eager execution. Performance could be improved with tf.function.",
            {"eager_ms": round(ho.eager_ms, 3), "share_of_capture_percent": round(eager_pct, 2)},
            ["Wrap the step in @tf.function (or use Keras fit)"]))
    stats = r.step_stats
    if stats and stats.get("count", 0) >= 3 and stats.get("cv_percent", 0) >= STEP_CV_PERCENT:
        out.append(Finding(
            "step-time-variance", "low", f"Step time varies (coefficient of variation {stats['cv_percent']:.0f}%)",
            f"Steps take {stats['min_ms']:.2f} to {stats['max_ms']:.2f} ms (median {stats['median_ms']:.2f} ms).",
            {k: round(v, 3) for k, v in stats.items()},
            ["Look at the slowest steps: compilation, checkpointing, evaluation or garbage collection inside them"]))
    order = {"high": 0, "medium": 1, "low": 2, "info": 3}
    return sorted(out, key=lambda f: order[f.severity])


def _recompile_fixes(framework: str) -> list[str]:
    common = ["Keep shapes static: pad or bucket variable-length batches to a few sizes",
              "Drop the ragged last batch: dataset.batch(n, drop_remainder=True)"]
    tf = ["TensorFlow: @tf.function(reduce_retracing=True) or an input_signature with None dimensions; "
          "pass tensors, not Python values, to tf.function"]
    jax = ["JAX: run with jax.config.update('jax_explain_cache_misses', True) to log why each cache miss happened",
           "JAX: mark configuration arguments static (static_argnums) and keep them hashable and stable",
           "JAX: use the persistent compilation cache (jax_compilation_cache_dir) so restarts do not recompile"]
    if framework == "tensorflow":
        return common + tf
    if framework == "jax":
        return common + jax
    return common + tf + jax


# Which findings explain each verdict, specific causes before generic ones: they are listed first.
VERDICT_FINDINGS = {
    "input-bound": ("input-bound",),
    "compile-bound": ("recompilation", "compilation-in-window"),
    "host-bound": ("host-offload", "host-callback", "eager-execution", "host-transfers", "host-overhead",
                   "device-idle"),
    "communication-bound": ("straggler", "collectives"),
    "device-bound": (),
    "unknown": (),
}


def order_findings(findings: list[Finding], verdict: str) -> list[Finding]:
    order = {"high": 0, "medium": 1, "low": 2, "info": 3}
    lead = VERDICT_FINDINGS.get(verdict, ())

    def key(f: Finding) -> tuple[int, int, int]:
        return (0, lead.index(f.id), 0) if f.id in lead else (1, 0, order[f.severity])

    return sorted(findings, key=key)


def decide(r) -> tuple[str, str]:
    """(verdict, reason) for one host."""
    inp, steps = r.input, r.steps
    if steps.count == 0 and r.device.per_core.empty:
        return "unknown", ("No step time measured and no device activity in the capture, so the bottleneck "
                           "cannot be told. " + steps.reason)
    if steps.count == 0:
        return "unknown", "No step time measured. Therefore we cannot tell where the performance bottleneck is. " + steps.reason
    total_ms = max(float(inp.per_step["step_ms"].sum()), 1e-9)
    compile_pct = max(inp.compile_percent, r.recompilation.share_of_capture_percent
                      if r.recompilation.total_compile_count >= 2 else 0.0)
    callback_pct = max(inp.host_callback_percent, 100 * r.host_ops.callback_ms / total_ms)
    offload_pct = r.host_ops.host_offload_share_of_device_percent * r.device.duty_cycle_percent / 100
    host_pct = max(callback_pct + (inp.idle_percent if inp.model == "host-loop-timeline" else 0.0),
                   offload_pct, inp.idle_percent if inp.model == "tpu-step-breakdown" else 0.0)
    # Collective time (waiting for other hosts plus transfer) is not compute (collectives.py).
    collective_pct = r.collectives.collective_percent if getattr(r, "collectives", None) is not None else 0.0
    # Device time spent on host-offload copies is waiting on the host link, not computing.
    device_pct = max(inp.compute_percent - offload_pct - collective_pct, 0.0)
    scores = {"input-bound": inp.input_percent, "compile-bound": compile_pct, "host-bound": host_pct,
              "communication-bound": collective_pct, "device-bound": device_pct}
    name, score = max(scores.items(), key=lambda kv: kv[1])
    if name == "device-bound" and score > 0:
        return name, (f"the device computes {device_pct:.1f}% of step time; input {inp.input_percent:.1f}%, "
                      f"compile {compile_pct:.1f}%, host {host_pct:.1f}%, collectives {collective_pct:.1f}%")
    if score < BOUND_PERCENT:
        return "unknown", (f"no single cause reaches {BOUND_PERCENT:.0f}%: device {device_pct:.1f}%, input "
                           f"{inp.input_percent:.1f}%, compile {compile_pct:.1f}%, host {host_pct:.1f}%")
    reasons = {
        "communication-bound": f"collectives take {collective_pct:.1f}% of step time",
        "input-bound": f"{inp.input_percent:.1f}% of step time waits for input (xprof: HIGHLY input-bound at >= 20%)",
        "compile-bound": f"compilation takes {compile_pct:.1f}% of the time "
                         f"({r.recompilation.total_compile_count} compiles in the window)",
        "host-bound": (f"host-offload copies fill {r.host_ops.host_offload_share_of_device_percent:.0f}% of device time"
                       if offload_pct == host_pct and offload_pct > 0 else
                       f"{host_pct:.1f}% of step time is host work the device waits for "
                       f"(callbacks {callback_pct:.1f}%, other host time {inp.idle_percent:.1f}%)"),
    }
    return name, reasons[name]


def _records(frame, n: int) -> list[dict]:
    import math

    out = []
    for rec in frame.head(n).to_dict(orient="records"):
        clean = {}
        for k, v in rec.items():
            if hasattr(v, "item"):
                v = v.item()
            if isinstance(v, float):
                v = None if math.isnan(v) else round(v, 4)
            elif v is not None and not isinstance(v, (int, str, bool)):
                v = None if str(v) in ("<NA>", "nan") else str(v)
            clean[k] = v
        out.append(clean)
    return out
