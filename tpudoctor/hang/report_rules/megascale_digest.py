"""HANG-005: whether Megascale (multi-slice) reported a hang in the logs, and what its digest blames."""

from __future__ import annotations

from tpudoctor.findings import Finding, Scope, Severity, Status
from tpudoctor.hang.digest import HangDigest
from tpudoctor.hang.report import HangReport
from tpudoctor.hang.report_rule import Example, HangReportRule, example_report

_NO_DIGEST = "No Megascale hang digest in the logs"
_DIGEST = HangDigest(source="/tmp/tpu_logs/tpu-runtime.log", line_no=8812, logged_at=None, kind="digest",
                     cause="bad_tpu_chip", headline="Detected a hang: host t1v-n-3 has a bad TPU chip",
                     culprit_hosts=["t1v-n-3"])
_TIMED_OUT = HangDigest(source="/tmp/tpu_logs/tpu-runtime.log", line_no=120, logged_at=None, kind="timed_out",
                        headline="HANG_DETECTED: collective timed out")


class MegascaleDigest(HangReportRule):
    """Megascale, the runtime that joins slices over the data-centre network, writes a hang digest when it
    detects one: the coordinator's verdict (the cause and the culprit hosts) or a worker's timed-out line. A
    digest is a FAIL that names the hosts; none in the logs read is a PASS that says how many were read."""

    id = "HANG-005"
    title = "Megascale reported a hang"
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/troubleshoot-multislice"
    examples = (
        Example("no digest", example_report(environment={"log_sources": ["/tmp/tpu_logs/tpu-runtime.log"]}),
                      Status.PASS),
        Example("coordinator's digest", example_report("hung", digests=[_DIGEST]), Status.FAIL),
        Example("a worker timed out", example_report("hung", digests=[_TIMED_OUT]), Status.FAIL),
    )

    def evaluate(self, report: HangReport) -> Finding:
        digests = [d for d in report.digests if d.kind in ("digest", "unrecoverable")]
        timeouts = [d for d in report.digests if d.kind == "timed_out"]
        if not digests and not timeouts:
            sources = report.environment.get("log_sources") or []
            return self.finding(Status.PASS, f"none in {len(sources)} log source(s)" if sources else "no log was read",
                                title=_NO_DIGEST, severity=Severity.INFO, evidence={"sources": sources[:20]})
        if not digests:
            last = timeouts[-1]
            return self.finding(Status.FAIL, f"{last.headline} ({last.source}:{last.line_no}); the coordinator's "
                                             "digest (worker 0 of slice 0) says why", severity=Severity.HIGH,
                                evidence={"timed_out": [d.to_dict() for d in timeouts[-3:]]})
        last = digests[-1]
        hosts = last.culprit_hosts or last.nonzero_pc_hosts
        message = f"Megascale: {last.cause or 'cause unknown'}" + (f"; culprit hosts {', '.join(hosts)}" if hosts else "")
        message += f" ({last.source}:{last.line_no})"
        return self.finding(Status.FAIL, message, severity=Severity.HIGH,
                            evidence={"digest": {k: v for k, v in last.to_dict().items() if k != "text"},
                                      "count": len(digests)}, scope=Scope.of(hosts=hosts))
