"""Steps that wait for input (xprof's input-pipeline analysis thresholds)."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import BreakdownFigures, HostResult
from tpudoctor.profile.rule import SHARE_OF_STEP, Example, ProfileRule

TF_DATA_FIXES = (
    "Add .prefetch(tf.data.AUTOTUNE) as the last step of the tf.data pipeline",
    "Parallelise preprocessing: .map(fn, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)",
    "Read files in parallel: .interleave(tf.data.TFRecordDataset, num_parallel_calls=tf.data.AUTOTUNE)",
    "Cache decoded data that fits in memory with .cache(); store inputs as TFRecord shards, not many small files",
    "Move Python preprocessing (tf.numpy_function/py_function) into TensorFlow ops, or preprocess offline",
)
JAX_INPUT_FIXES = (
    "Prefetch batches to the device: keep 2 batches in flight (e.g. flax.jax_utils.prefetch_to_device or a "
    "background thread calling jax.device_put)",
    "Load data with worker processes (grain, tf.data with .prefetch, or a multiprocessing loader) instead of "
    "Python in the training loop",
    "Do heavy preprocessing offline or inside the jitted step on the device",
)


def _host(input_percent: float, framework: str = "jax") -> HostResult:
    return HostResult("h", framework=framework, breakdown=BreakdownFigures(
        "host-loop-timeline", percent={"input": input_percent},
        input_stages=[{"stage": "load_batch", "count": 8, "total_ms": 40.0}]))


class InputBound(ProfileRule):
    """Steps wait for the next batch: the share of step time spent waiting for input, with xprof's
    thresholds (MODERATELY from 5 %, HIGHLY from 20 %)."""

    id = "input-bound"
    needs = ('steps', 'step-breakdown')
    title = "Steps do not wait for input"
    bottleneck = "input-bound"
    scores_verdict = True
    lead_rank = 10
    MODERATELY_INPUT_BOUND_PERCENT = 5.0
    HIGHLY_INPUT_BOUND_PERCENT = 20.0
    docs = "https://www.tensorflow.org/guide/data_performance"
    examples = (
        Example("not input-bound", _host(1.0), Status.PASS),
        Example("moderately", _host(8.0, "tensorflow"), Status.WARN),
        Example("highly", _host(35.0), Status.FAIL),
    )

    def evaluate(self, host: HostResult):
        b = host.breakdown
        pct = b.part("input")
        stage = b.input_stages[0]["stage"] if b.input_stages else None
        evidence = {"input_percent": round(pct, 2), SHARE_OF_STEP: round(pct, 2),
                    "classification": b.classification, "largest_input_stage": stage,
                    "input_stages": b.input_stages[:5],
                    "thresholds_percent": {"moderately": self.MODERATELY_INPUT_BOUND_PERCENT,
                                           "highly": self.HIGHLY_INPUT_BOUND_PERCENT}}
        if pct < self.MODERATELY_INPUT_BOUND_PERCENT:
            return self.passed(f"{pct:.1f}% of step time waits for input", evidence=evidence)
        highly = pct >= self.HIGHLY_INPUT_BOUND_PERCENT
        word = "HIGHLY" if highly else "MODERATELY"
        evidence["classification"] = "highly" if highly else "moderately"
        fixes = TF_DATA_FIXES if host.framework == "tensorflow" else JAX_INPUT_FIXES + TF_DATA_FIXES[:1]
        return self.fired(
            Severity.HIGH if highly else Severity.MEDIUM,
            f"{word} input-bound: {pct:.1f}% of step time waits for input",
            f"Your program is {word} input-bound because {pct:.1f}% of the total step time sampled "
            "is waiting for input." + (f" Largest input stage: {stage}." if stage else ""),
            evidence=evidence, fixes=fixes)
