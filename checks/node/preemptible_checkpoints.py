from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

_NODE = {"name": "my-tpu", "project": "p", "zone": "us-central2-b", "spot": True, "preemptible": False}


class PreemptibleHasCheckpoints(Check):
    """A spot or preemptible node can be reclaimed at any moment (about 30 seconds' notice), so
    the job must save checkpoints to GCS; warns when no GCS checkpoint directory is configured."""

    id = "NODE-003"
    title = "Spot/preemptible node saves checkpoints to GCS"
    step = Step.NODE
    requires = ("NODE-001",)
    facts = ("tpu.node", "options.checkpoint_dirs")
    severity = Severity.MEDIUM
    docs = "https://cloud.google.com/tpu/docs/spot"
    examples = (
        Example("on-demand node", {"tpu.node": dict(_NODE, spot=False), "options.checkpoint_dirs": []}, Status.PASS),
        Example("spot with GCS checkpoints", {"tpu.node": _NODE, "options.checkpoint_dirs": ["gs://b/ckpt"]},
                Status.PASS),
        Example("spot without checkpoints", {"tpu.node": _NODE, "options.checkpoint_dirs": []}, Status.WARN),
        Example("preemptible with local checkpoints", {"tpu.node": dict(_NODE, spot=False, preemptible=True),
                                                       "options.checkpoint_dirs": ["/tmp/ckpt"]}, Status.WARN),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        node = facts.require("tpu.node")
        dirs = facts.value("options.checkpoint_dirs") or []
        kind = "spot" if node.get("spot") else "preemptible" if node.get("preemptible") else None
        evidence = {"scheduling": kind or "on-demand", "checkpoint_dirs": dirs}
        if kind is None:
            return self.passed("on-demand node: not subject to preemption", evidence=evidence)
        in_gcs = [d for d in dirs if d.startswith("gs://")]
        if in_gcs:
            return self.passed(f"{kind} node with checkpoints in {', '.join(in_gcs)}", evidence=evidence)
        why = "no checkpoint directory was given" if not dirs else f"checkpoints go to {', '.join(dirs)} on the VM's own disk"
        return self.warn(
            f"{node.get('name')} is a {kind} node and {why}: a preemption loses all training progress",
            evidence=evidence,
            remediation=remediation(
                "Save checkpoints to GCS every few minutes (tf.train.CheckpointManager or orbax with a gs:// "
                "directory), restore the latest one at start-up, and pass it to tpudoctor with --checkpoint-dir."))
