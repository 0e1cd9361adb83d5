"""Shared judgement for the log checks: the ranked diagnoses of one log source become one result.

The result names the root cause (the first fatal finding in time) with its evidence and fix;
the other findings are listed in the evidence. Findings the node's state explains (socket
closed on a PREEMPTED node) are retold by ``explain_with_node``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tpudoctor.check import Check
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Step
from tpudoctor.logdiag import Diagnosis, explain_with_node

MAX_OTHER_FINDINGS = 12


class _LogDiagnosisCheck(Check):
    step = Step.LOGS
    fact_key: ClassVar[str] = ""
    what: ClassVar[str] = "log"

    def evaluate(self, facts: Facts) -> CheckResult:
        scan = facts.require(self.fact_key)
        diagnoses = [Diagnosis.from_dict(d) for d in scan.get("diagnoses", [])]
        diagnoses = explain_with_node(diagnoses, facts.value("tpu.node"))
        sources = [s.get("source") for s in scan.get("sources", [])]
        base = {"lines_scanned": scan.get("lines_scanned", 0), "sources": sources,
                "catalog_version": scan.get("catalog_version")}
        if scan.get("truncated"):
            base["truncated_at_entries"] = scan.get("entries")  # only the oldest entries were read
        if not diagnoses:
            return self.passed(
                f"nothing fatal and no known failure in {base['lines_scanned']:,} {self.what} line(s) "
                f"from {len(sources)} source(s)", evidence=base)
        top, rest = diagnoses[0], diagnoses[1:]
        repeat = f", {top.count} times" if top.count > 1 else ""
        message = f"{top.title} ({top.location}{repeat}): {top.cause}"
        evidence: dict[str, Any] = {"signature": top.signature_id, **top.evidence,
                                    "location": top.location, "count": top.count}
        if top.first_timestamp:
            evidence["first_timestamp"] = top.first_timestamp
        evidence["log_excerpt"] = top.excerpt
        if rest:
            evidence["other_findings"] = [
                f"{d.status.value} {d.signature_id}: {d.title} ({d.location}, {d.count}x)"
                for d in rest[:MAX_OTHER_FINDINGS]
            ]
        evidence.update(base)
        if top.fatal:
            return self.fail(message, evidence=evidence, remediation=top.remediation, severity=top.severity)
        return self.warn(message, evidence=evidence, remediation=top.remediation, severity=top.severity)
