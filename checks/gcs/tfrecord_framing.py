from __future__ import annotations

from typing import Any

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step
from tpudoctor.tfrecord import encode_records, scan_framing

_GOOD = encode_records([b"example-1", b"example-2" * 10])


def _head(uri: str, data: bytes) -> dict[str, Any]:
    return {"path": "gs://b/train", "uri": uri, "size_bytes": len(data), "head": data, "failure": None}


class TfRecordFraming(Check):
    """The first records of the data files are valid TFRecord framing (length and masked CRC32C
    of length and data); says when the files are another format or GZIP-compressed TFRecords."""

    id = "GCS-006"
    title = "Data files are valid TFRecords"
    step = Step.GCS
    requires = ("GCS-005",)
    facts = ("gcs.record_heads",)
    severity = Severity.HIGH
    docs = "https://www.tensorflow.org/tutorials/load_data/tfrecord"
    examples = (
        Example("valid", {"gcs.record_heads": [_head("gs://b/train/a.tfrecord", _GOOD)]}, Status.PASS),
        Example("corrupt", {"gcs.record_heads": [_head("gs://b/train/a.tfrecord", _GOOD[:-1] + b"\0")]}, Status.FAIL),
        Example("CSV", {"gcs.record_heads": [_head("gs://b/train/a.csv", b"x,y\n1,2\n")]}, Status.WARN),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        heads = facts.require("gcs.record_heads")
        files: list[dict[str, Any]] = []
        for entry in heads:
            if entry.get("failure"):
                files.append({"uri": entry["uri"], "verdict": "unreadable", "problem": entry["failure"].get("message")})
                continue
            data = entry["head"] or b""
            scan = scan_framing(data, at_eof=len(data) >= entry["size_bytes"])
            files.append({"uri": entry["uri"], "verdict": scan.verdict, "records_checked": scan.records_checked,
                          "problem": scan.problem, "problem_offset": scan.problem_offset,
                          "detected_format": scan.detected_format, "last_record_cut_off": scan.truncated_record})
        evidence = {"files": files}
        corrupt = [f for f in files if f["verdict"] == "corrupt"]
        unreadable = [f for f in files if f["verdict"] == "unreadable"]
        other = [f for f in files if f["verdict"] in ("not_tfrecord", "empty")]
        gzipped = [f for f in files if f["verdict"] == "gzip_tfrecord"]
        if corrupt:
            f = corrupt[0]
            return self.fail(
                f"{f['uri']} is a corrupt TFRecord: {f['problem']} at byte {f['problem_offset']} "
                f"(after {f['records_checked']} valid record(s))",
                evidence=evidence,
                remediation=remediation("Regenerate the file (an interrupted upload or a writer that did not close "
                                        "leaves a broken tail), then upload it again.",
                                        f"gcloud storage objects describe {f['uri']}"))
        if unreadable:
            f = unreadable[0]
            return self.error(f"could not read {f['uri']}: {f['problem']}", evidence=evidence)
        if other:
            named = [f for f in other if ".tfrecord" in f["uri"].lower()]
            described = ", ".join(f"{f['uri']} ({f['detected_format'] or 'unknown format'})" if f["verdict"] != "empty"
                                  else f"{f['uri']} (empty)" for f in other)
            fix = remediation("If the job reads these with tf.data.TFRecordDataset, convert them to TFRecord "
                              "(tf.io.TFRecordWriter) or use the reader for their format.")
            if named:
                return self.fail(f"files named .tfrecord are not TFRecords: {described}", evidence=evidence,
                                 remediation=fix)
            return self.warn(f"data files are not TFRecords: {described}", evidence=evidence, remediation=fix,
                             severity=Severity.LOW)
        if gzipped:
            return self.warn(
                f"{gzipped[0]['uri']} is a GZIP-compressed TFRecord: reading it needs compression_type='GZIP'",
                evidence=evidence, severity=Severity.MEDIUM,
                remediation=remediation("Pass compression_type='GZIP' to tf.data.TFRecordDataset for these files."))
        checked = sum(f["records_checked"] for f in files)
        return self.passed(f"{checked} record(s) in {len(files)} file(s) have valid TFRecord framing",
                           evidence=evidence)
