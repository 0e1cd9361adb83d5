"""Shared judgement for the log checks: the ranked diagnoses of one log source become one result.

The result names the root cause (the first fatal finding in time) with its evidence and fix;
the other findings are listed in the evidence. Findings the node's state explains (socket
closed on a PREEMPTED node) are retold by ``explain_with_node``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tpudoctor.check import Check, remediation
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Finding, Status, Step
from tpudoctor.logdiag import cause_of, explain_with_node, pulled_evidence, where_found

MAX_OTHER_FINDINGS = 12


class _LogDiagnosisCheck(Check):
    step = Step.LOGS
    fact_key: ClassVar[str] = ""
    what: ClassVar[str] = "log"
    sources_named_by_user: ClassVar[bool] = False
    """True where the user named every source: one that was empty or binary is then a WARN, never a PASS."""

    def evaluate(self, facts: Facts) -> CheckResult:
        scan = facts.require(self.fact_key)
        diagnoses = [Finding.from_dict(d) for d in scan.get("diagnoses", [])]
        diagnoses = explain_with_node(diagnoses, facts.value("tpu.node"))
        read = scan.get("sources", [])
        sources = [s.get("source") for s in read]
        unread = [s for s in read if s.get("state", "text") != "text"]
        base = {"lines_scanned": scan.get("lines_scanned", 0), "sources": sources,
                "catalog_version": scan.get("catalog_version")}
        if unread:
            base["unread_sources"] = [f"{s.get('source')}: {s.get('reason') or s.get('state')}" for s in unread]
        if isinstance(scan.get("templates"), dict):  # a worker's: what merge compares across workers
            base["log_templates"] = scan["templates"]
        if scan.get("truncated"):
            base["truncated_at_entries"] = scan.get("entries")  # only the oldest entries were read
        if not diagnoses:
            text_sources = len(read) - len(unread)
            if unread and (self.sources_named_by_user or not text_sources):
                first = unread[0]
                return self.warn(
                    f"{first.get('source')} {first.get('reason') or first.get('state')}"
                    + (f" (and {len(unread) - 1} more source(s) not read)" if len(unread) > 1 else "")
                    + (f"; no error-level event in the {base['lines_scanned']:,} {self.what} line(s) of the "
                       f"{text_sources} other source(s)" if text_sources else ""),
                    evidence=base,
                    remediation=remediation(
                        "Give the job's text log: its stdout and stderr together (python train.py 2>&1 | tee "
                        "train.log), or the file your launcher writes.",
                        "python train.py 2>&1 | tee train.log && tpudoctor check --step 4 --log-file train.log"))
            return self.passed(
                f"no error-level event in {base['lines_scanned']:,} {self.what} line(s) "
                f"from {len(sources)} source(s)", evidence=base)
        top, rest = diagnoses[0], diagnoses[1:]
        found = top.evidence
        message = f"{top.title} ({where_found(top)}): {cause_of(top)}"
        evidence: dict[str, Any] = {"signature": top.id, **pulled_evidence(top),
                                    "location": found.get("location"), "count": found.get("count", 1)}
        if found.get("first_timestamp"):
            evidence["first_timestamp"] = found["first_timestamp"]
        evidence["log_excerpt"] = found.get("log_excerpt", [])
        if rest:
            evidence["other_findings"] = [
                f"{d.status.value} {d.id}: {d.title} ({d.evidence.get('location')}, {d.evidence.get('count', 1)}x)"
                for d in rest[:MAX_OTHER_FINDINGS]
            ]
        evidence.update(base)
        judge = self.fail if top.status is Status.FAIL else self.warn
        result = judge(message, evidence=evidence, remediation=top.remediation, severity=top.severity)
        result.scope = top.scope  # the workers whose logs show the root cause, when the sources named them
        return result
