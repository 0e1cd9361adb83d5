from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step
from tpudoctor.units import format_bytes


class DataPrefixHasObjects(Check):
    """Each gs:// data path has objects under it (count and total size), so the input
    pipeline has something to read."""

    id = "GCS-005"
    title = "Data paths contain objects"
    step = Step.GCS
    requires = ("GCS-004",)
    facts = ("gcs.objects",)
    severity = Severity.CRITICAL
    docs = "https://cloud.google.com/tpu/docs/storage-options"
    examples = (
        Example("has data", {"gcs.objects": {"gs://b/train": {"bucket": "b", "prefix": "train", "object_count": 3,
                                                              "total_bytes": 3 << 20, "truncated": False,
                                                              "empty_object_count": 0, "failure": None}}}, Status.PASS),
        Example("empty prefix", {"gcs.objects": {"gs://b/train": {"bucket": "b", "prefix": "train", "object_count": 0,
                                                                  "total_bytes": 0, "truncated": False,
                                                                  "empty_object_count": 0, "failure": None}}}, Status.FAIL),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        objects = facts.require("gcs.objects")
        evidence = {"paths": objects}
        denied = [(p, o["failure"]) for p, o in objects.items() if o.get("failure")]
        empty = [p for p, o in objects.items() if not o.get("failure") and not o.get("object_count")]
        if denied:
            path, failure = denied[0]
            if failure.get("kind") != "permission_denied":
                return self.error(f"could not list {path}: {failure.get('kind')}: {failure.get('message')}",
                                  evidence=evidence)
            return self.fail(f"listing {path} was denied: {failure.get('message')}", evidence=evidence,
                             remediation=remediation("Grant roles/storage.objectViewer on the bucket (see GCS-004)."))
        if empty:
            return self.fail(
                f"no objects under {', '.join(empty)}", evidence=evidence,
                remediation=remediation(
                    "Check the path (a trailing folder name, a typo, the wrong bucket) and that the data was uploaded.",
                    *(f"gcloud storage ls {p.rstrip('/').rsplit('/', 1)[0]}/" for p in empty)))
        parts = []
        for path, o in objects.items():
            count = f"{o['object_count']}{'+' if o.get('truncated') else ''}"
            parts.append(f"{path}: {count} objects, {format_bytes(o.get('total_bytes', 0))}")
        return self.passed("; ".join(parts), evidence=evidence)
