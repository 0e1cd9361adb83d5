"""``tpudoctor bench``: train a reference model, record throughput, and gate it against a baseline."""

from __future__ import annotations

import argparse

from tpudoctor.bench import DEFAULT_CONFIRM_RUNS
from tpudoctor.commands.common import add_redact_flag
from tpudoctor.formats import BENCH_FORMATS
from tpudoctor.product import Product


def register(sub: argparse._SubParsersAction) -> None:
    from tpudoctor.reference_models import MODEL_NAMES  # names only; no framework is imported

    parser = sub.add_parser(
        "bench",
        help="measure a reference model's throughput; gate it against a baseline in CI",
        description=(
            "Train a reference model on synthetic data and report examples/s per timed window (compile "
            "excluded; the warm-up windows at the head, found from the windows themselves (MSER), dropped). "
            "With --baseline, exit 1 when throughput dropped beyond --tolerance and the drop is significant "
            "(one-sided Mann-Whitney U, >= 6 windows per side); a drop on a machine much noisier than the "
            "baseline's that its extra noise could explain is 'unknown' (a warning), not a regression."
        ),
    )
    run_group = parser.add_argument_group("run")
    run_group.add_argument("--model", required=True, choices=MODEL_NAMES)
    run_group.add_argument("--framework", choices=("tensorflow", "jax"), default="tensorflow",
                           help="tensorflow (default) or jax; every model runs in both")
    run_group.add_argument("--steps", type=int, default=20, metavar="N", help="steps per timed window (default 20)")
    run_group.add_argument("--repeats", type=int, default=8, metavar="K",
                           help="steady timed windows (default 8; at least 6 to save or compare a baseline); "
                                "K/2 more are timed so that the warm-up can be dropped")
    run_group.add_argument("--batch-size", type=int, default=None, metavar="B",
                           help="per-replica batch size (default: the model's); global = B x replicas")
    run_group.add_argument("--accelerator", choices=("auto", "tpu", "cpu"), default="auto",
                           help="auto uses TPUStrategy when a TPU is attached")
    run_group.add_argument("--data-dir", metavar="URI", default=None,
                           help="write the synthetic data as TFRecord here (local or gs://) and train from it")
    run_group.add_argument("--profile", metavar="LOGDIR", default=None,
                           help="capture one extra window with the framework's profiler (read with 'tpudoctor profile analyze')")
    run_group.add_argument("--inject-step-delay", type=float, default=0.0, metavar="MS",
                           help="sleep MS more in every step: a known slowdown, to test a CI gate (never with "
                                "--save-baseline)")
    run_group.add_argument("--timeout", default="30m", metavar="DURATION", help="limit for the run (default 30m)")
    gate = parser.add_argument_group("baseline")
    gate.add_argument("--save-baseline", metavar="FILE", help="write this run as a baseline file")
    gate.add_argument("--baseline", metavar="FILE", help="compare with this baseline; exit 1 on a regression")
    gate.add_argument("--tolerance", default="5%", metavar="PCT", help="allowed drop of the median (default 5%%)")
    gate.add_argument("--alpha", type=float, default=0.002, help="significance level of the U test (default 0.002)")
    gate.add_argument("--baseline-runs", type=int, default=3, metavar="N",
                      help="with --save-baseline, time N fresh processes and keep the one with the middle median "
                           "(default 3): one process can run 20%% slower than the next on the same machine")
    gate.add_argument("--confirm-runs", type=int, default=DEFAULT_CONFIRM_RUNS, metavar="N",
                      help="time a suspected regression again on up to N fresh runs before failing (default "
                           f"{DEFAULT_CONFIRM_RUNS}; the first run without the drop settles it; 0 judges on one "
                           "run): a process or a machine that was slower for a run does not fail the build")
    gate.add_argument("--allow-mismatch", action="store_true",
                      help="compare even when the baseline's key (model version, accelerator, versions, batch) differs")
    out = parser.add_argument_group("output")
    out.add_argument("--format", choices=BENCH_FORMATS, default=None, help="report format (default: $TPUDOCTOR_FORMAT, the config file's format, or text)")
    out.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    out.add_argument("--junit", metavar="FILE", help="also write a JUnit XML file")
    out.add_argument("--markdown-summary", metavar="FILE",
                     help="also write a Markdown summary (append it to $GITHUB_STEP_SUMMARY)")
    add_redact_flag(out)
    parser.set_defaults(handler=PRODUCT, settings_spec={"format": "text"})


PRODUCT = Product("bench", "tpudoctor.bench.product", "BenchOptions", BENCH_FORMATS, inputs="baseline",
                  side_outputs=(("junit", "junit"), ("markdown_summary", "markdown")))
