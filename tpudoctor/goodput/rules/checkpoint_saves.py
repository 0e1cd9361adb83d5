"""Checkpoint saves that block training."""

from __future__ import annotations

from tpudoctor.findings import Status
from tpudoctor.goodput.rule import Example, GoodputRule
from tpudoctor.goodput.rules._common import badput, example_goodput, level, skipped

BUCKET = "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"
SYNC_FIXES = (
    "Save asynchronously so training goes on while the checkpoint is written: Orbax "
    "ocp.CheckpointManager(directory, options=ocp.CheckpointManagerOptions(enable_async_checkpointing=True)); "
    "MaxText: async_checkpointing=true",
    "Then only the copy of the arrays to host memory blocks a step (Orbax prints it as 'Finished blocking save in "
    "N seconds')",
    "If saves must stay synchronous, save less often (MaxText checkpoint_period, Orbax save_interval_steps), "
    "weighing the steps a failure would redo",
)
ASYNC_FIXES = (
    "The blocking part of an async save copies the arrays to host memory: keep fewer or smaller arrays in the "
    "checkpoint (no optimizer copies you do not need), or save less often",
    "A save that waits for the previous one to finish blocks too: save less often than a save takes",
)


class CheckpointSaves(GoodputRule):
    """Checkpoint saves that block the training loop: the blocking time of every save (all of a synchronous
    save, the host copy of an asynchronous one) as a share of wall time."""

    id = "checkpoint-saves"
    title = "Checkpoint saves do not hold training up"
    bucket = BUCKET
    WARN_PERCENT = 3.0
    FAIL_PERCENT = 10.0
    docs = "https://orbax.readthedocs.io/en/latest/guides/checkpoint/async_checkpointing.html"
    examples = (
        Example("small", example_goodput(**{BUCKET: 0.5}), Status.PASS),
        Example("sync saves take 12%", example_goodput(
            **{BUCKET: 12.0}, saves=[{"mode": "sync"}] * 4), Status.FAIL),
        Example("async blocking 4%", example_goodput(
            **{BUCKET: 4.0}, saves=[{"mode": "async"}] * 4), Status.WARN),
        Example("no timestamps", example_goodput(**{BUCKET: None}), Status.SKIP),
    )

    def evaluate(self, goodput):
        entry = badput(goodput, BUCKET)
        if entry.get("percent") is None:
            return skipped(self, "the log cannot tell how long saves blocked: " + str(entry.get("reason") or
                                                                                      "no wall time"))
        pct = float(entry["percent"])
        saves = goodput.get("saves") or []
        modes = {s.get("mode") for s in saves}
        sync = sum(1 for s in saves if s.get("mode") == "sync")
        evidence = {"save_percent": pct, "save_s": entry.get("seconds"), "saves": len(saves),
                    "sync_saves": sync, "async_saves": sum(1 for s in saves if s.get("mode") == "async"),
                    "estimated": bool(entry.get("estimated")),
                    "thresholds_percent": {"warn": self.WARN_PERCENT, "fail": self.FAIL_PERCENT}}
        severity = level(pct, self.WARN_PERCENT, self.FAIL_PERCENT)
        if severity is None:
            return self.passed(f"checkpoint saves blocked training for {pct:.1f}% of the wall time", evidence=evidence)
        kind = "synchronous" if sync or modes <= {None, "unknown", "sync"} else "asynchronous"
        return self.fired(
            severity, f"{kind.capitalize()} checkpoint saves take {pct:.1f}% of the wall time",
            f"{len(saves)} checkpoint save(s) blocked training for {entry.get('seconds') or 0:.0f} s "
            f"({pct:.1f}% of the wall time); {sync} of them synchronous.",
            evidence=evidence, fixes=SYNC_FIXES if kind == "synchronous" else ASYNC_FIXES)
