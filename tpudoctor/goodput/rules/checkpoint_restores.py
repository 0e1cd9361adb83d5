"""Checkpoint restores at start-up."""

from __future__ import annotations

from tpudoctor.findings import Status
from tpudoctor.goodput.rule import Example, GoodputRule
from tpudoctor.goodput.rules._common import badput, example_goodput, level, skipped

BUCKET = "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME"
FIXES = (
    "Read the checkpoint once and broadcast it over the TPU interconnect instead of every replica reading GCS: "
    "MaxText enable_single_replica_ckpt_restoring=true (Orbax SingleReplicaArrayHandler)",
    "Restore from a local or in-memory copy after a restart (Orbax emergency checkpointing: local checkpoints "
    "on each host plus persistent ones on GCS)",
    "Keep the checkpoint bucket in the TPU's region and enable hierarchical namespace / parallel reads",
)


class CheckpointRestores(GoodputRule):
    """Time spent restoring checkpoints at start-up, as a share of wall time."""

    id = "checkpoint-restores"
    title = "Restoring checkpoints is quick"
    bucket = BUCKET
    WARN_PERCENT = 3.0
    FAIL_PERCENT = 10.0
    docs = "https://orbax.readthedocs.io/en/latest/guides/checkpoint/checkpointing_pytrees.html"
    examples = (
        Example("small", example_goodput(**{BUCKET: 0.4}), Status.PASS),
        Example("4%", example_goodput(**{BUCKET: 4.0}), Status.WARN),
        Example("unknown", example_goodput(**{BUCKET: None}), Status.SKIP),
    )

    def evaluate(self, goodput):
        entry = badput(goodput, BUCKET)
        if entry.get("percent") is None:
            return skipped(self, "the log cannot tell how long restores took: "
                           + str(entry.get("reason") or "no wall time"))
        pct = float(entry["percent"])
        evidence = {"restore_percent": pct, "restore_s": entry.get("seconds"),
                    "restores": len(goodput.get("restores") or []),
                    "thresholds_percent": {"warn": self.WARN_PERCENT, "fail": self.FAIL_PERCENT}}
        severity = level(pct, self.WARN_PERCENT, self.FAIL_PERCENT)
        if severity is None:
            return self.passed(f"restoring checkpoints took {pct:.1f}% of the wall time", evidence=evidence)
        return self.fired(severity, f"Restoring checkpoints takes {pct:.1f}% of the wall time",
                          f"Checkpoint restores took {entry.get('seconds') or 0:.0f} s ({pct:.1f}% of the wall "
                          "time).", evidence=evidence, fixes=FIXES)
