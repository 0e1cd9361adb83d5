"""Training waiting for data."""

from __future__ import annotations

from tpudoctor.findings import Status
from tpudoctor.goodput.rule import Example, GoodputRule
from tpudoctor.goodput.rules._common import badput, example_goodput, level, skipped

BUCKET = "DATA_LOADING_SYNC"
FIXES = (
    "Load and prefetch data in the background: tf.data with .prefetch(tf.data.AUTOTUNE), grain with worker "
    "processes, or a thread that keeps 2 batches on the device",
    "Shrink start-up waits such as filling a large shuffle buffer: shuffle files and a smaller buffer, or "
    "store data pre-shuffled",
    "tpudoctor profile analyze on a capture shows whether steps wait for input",
)


class DataLoading(GoodputRule):
    """Time the training loop waited for data (a blocking data load or shuffle-buffer fill the log shows),
    as a share of wall time."""

    id = "data-loading"
    title = "Training does not wait for data"
    bucket = BUCKET
    WARN_PERCENT = 3.0
    FAIL_PERCENT = 10.0
    docs = "https://www.tensorflow.org/guide/data_performance"
    examples = (
        Example("none", example_goodput(**{BUCKET: 0.0}), Status.PASS),
        Example("5%", example_goodput(**{BUCKET: 5.0}), Status.WARN),
        Example("12%", example_goodput(**{BUCKET: 12.0}), Status.FAIL),
        Example("unknown", example_goodput(**{BUCKET: None}), Status.SKIP),
    )

    def evaluate(self, goodput):
        entry = badput(goodput, BUCKET)
        if entry.get("percent") is None:
            return skipped(self, "the log cannot tell how long training waited for data: "
                           + str(entry.get("reason") or "no wall time"))
        pct = float(entry["percent"])
        evidence = {"data_loading_percent": pct, "data_loading_s": entry.get("seconds"),
                    "thresholds_percent": {"warn": self.WARN_PERCENT, "fail": self.FAIL_PERCENT}}
        severity = level(pct, self.WARN_PERCENT, self.FAIL_PERCENT)
        if severity is None:
            return self.passed(f"waiting for data took {pct:.1f}% of the wall time (as far as the log shows)",
                               evidence=evidence)
        return self.fired(severity, f"Waiting for data takes {pct:.1f}% of the wall time",
                          f"The log shows training blocked on data for {entry.get('seconds') or 0:.0f} s "
                          f"({pct:.1f}% of the wall time).", evidence=evidence, fixes=FIXES)
