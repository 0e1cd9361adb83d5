"""Subprocess entry point: ``python -m tpudoctor.reference_models.run --model dense``.

Prints ``:::TPUDOCTOR`` result lines on stdout. Exit 0 when the run trained and its loss
dropped, 1 when the loss did not drop, 2 for bad arguments, 3 when training raised (the
error is printed to stderr and as a ``run_error`` line, for the step 4 log catalog).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from tpudoctor.reference_models import FRAMEWORKS, MODEL_NAMES, result_log
from tpudoctor.reference_models.device import ACCELERATORS


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tpudoctor.reference_models.run",
                                     description="Train a tpudoctor reference model on synthetic data.")
    parser.add_argument("--model", choices=MODEL_NAMES, default="dense")
    parser.add_argument("--framework", choices=FRAMEWORKS, default="tensorflow",
                        help="tensorflow or jax (every model in both)")
    parser.add_argument("--steps", type=_positive, default=20, help="steps per timed window")
    parser.add_argument("--repeats", type=_positive, default=8, help="number of timed windows")
    parser.add_argument("--batch-size", type=_positive, default=None, help="per-replica batch size")
    parser.add_argument("--accelerator", choices=ACCELERATORS, default="auto",
                        help="auto: TPUStrategy when a TPU is attached, else the default strategy")
    parser.add_argument("--data-dir", default=None,
                        help="write the synthetic data as TFRecord here (local or gs://) and train from it")
    parser.add_argument("--profile", default=None, metavar="LOGDIR",
                        help="capture one extra window with the TensorFlow profiler into LOGDIR")
    parser.add_argument("--learning-rate", type=float, default=None)
    parser.add_argument("--step-delay-ms", type=_non_negative_float, default=0.0, metavar="MS",
                        help="sleep MS more in every step: a known slowdown, for testing a throughput gate")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    from tpudoctor.reference_models.jax_models import JAX_MODELS
    from tpudoctor.reference_models.train import RunConfig

    if args.framework == "jax":
        if args.model not in JAX_MODELS:
            parser.error(f"the JAX variant has {', '.join(JAX_MODELS)}, not {args.model}")
        if args.data_dir:
            parser.error("--data-dir (TFRecord input) is TensorFlow only")
        from tpudoctor.reference_models.jax_train import run
    else:
        from tpudoctor.reference_models.train import run

    config = RunConfig(model=args.model, steps_per_window=args.steps, windows=args.repeats,
                       per_replica_batch_size=args.batch_size, accelerator=args.accelerator,
                       data_dir=args.data_dir, profile_dir=args.profile, learning_rate=args.learning_rate,
                       step_delay_ms=args.step_delay_ms)
    try:
        result = run(config)
    except Exception as exc:  # noqa: BLE001 - reported as a structured error for the caller to classify
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        result_log.emit(result_log.RUN_ERROR, {"type": type(exc).__name__, "message": str(exc)[:4000]})
        return 3
    return 0 if result["loss_dropped"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
