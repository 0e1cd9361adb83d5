from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge.uri import parse_path
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step


class GcsUriSyntax(Check):
    """The data, checkpoint and log paths are well-formed: gs:// URIs with a valid lower-case
    bucket name, no web URLs or 'gs:/' typos, and checkpoints/logs not on the VM's ephemeral disk."""

    id = "GCS-001"
    title = "GCS paths are well-formed"
    step = Step.GCS
    facts = ("gcs.paths",)
    severity = Severity.HIGH
    docs = "https://cloud.google.com/storage/docs/buckets#naming"
    examples = (
        Example("good", {"gcs.paths": [parse_path("gs://bucket/train", "data")]}, Status.PASS),
        Example("gs:/ typo", {"gcs.paths": [parse_path("gs:/bucket/train", "data")]}, Status.FAIL),
        Example("upper-case bucket", {"gcs.paths": [parse_path("gs://MyBucket/train", "data")]}, Status.FAIL),
        Example("local checkpoints", {"gcs.paths": [parse_path("/home/me/ckpt", "checkpoint")]}, Status.WARN),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        paths = facts.require("gcs.paths")
        problems = [(p, x) for p in paths for x in p["problems"]]
        evidence = {"paths": [{"path": p["raw"], "role": p["role"], "kind": p["kind"]} for p in paths],
                    "problems": [{"path": p["raw"], "code": x["code"], "suggestion": x["suggestion"]} for p, x in problems]}
        if not problems:
            gs = sum(1 for p in paths if p["kind"] == "gs")
            return self.passed(f"{len(paths)} path(s) well-formed ({gs} in GCS)", evidence=evidence)
        message = "; ".join(x["message"] for _, x in problems)
        fixes = [f"use {x['suggestion']} instead of {p['raw']}" for p, x in problems if x["suggestion"]]
        text = ("Fix the paths in your flags or config" + (": " + "; ".join(fixes) if fixes else "") +
                ". Bucket names are lower-case; the scheme is gs:// with two slashes.")
        if any(x["code"] == "local_writable" for _, x in problems):
            text += (" The TPU VM's disk goes with the node: write checkpoints and logs to a gs:// directory "
                     "in the TPU's region.")
        fix = remediation(text)
        if any(x["level"] == "fail" for _, x in problems):
            return self.fail(message, evidence=evidence, remediation=fix)
        return self.warn(message, evidence=evidence, remediation=fix, severity=Severity.MEDIUM)
