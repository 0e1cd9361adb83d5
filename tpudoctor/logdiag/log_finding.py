"""A log finding: one signature's occurrences aggregated into a ``Finding`` (its message says where first, then
the cause with the log's values put in), what a finding's message and evidence tell back (``where_found``,
``cause_of``, ``pulled_evidence``), and its retelling when the node's own state explains it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tpudoctor.findings import Finding, FindingKind, Remediation, Scope, Status, Step
from tpudoctor.logdiag.catalog import DIAGNOSIS_FACTS, Catalog, Signature, load_catalog
from tpudoctor.logdiag.events import LogEvent

EXCERPT_LINES = 8


@dataclasses.dataclass
class Occurrences:
    """All occurrences of one signature so far (the diagnoser keeps one per signature)."""

    signature: Signature
    cause: str
    pulled: dict[str, Any]
    remediation: Remediation
    source: str
    first_line_no: int | None
    last_line_no: int | None
    first_timestamp: str | None
    excerpt: list[str]
    order: tuple[int, int]
    """(event sequence, line) of the first occurrence, for ranking across sources."""
    count: int = 1
    sources: list[str] = dataclasses.field(default_factory=list)
    scope: Scope = dataclasses.field(default_factory=Scope)
    strength: int = 0
    """For the unrecognised failure: how strongly the quoted line says the job failed."""
    other_errors: list[str] = dataclasses.field(default_factory=list)
    """For the unrecognised failure: other error-level lines seen (``train.log:12: <line>``)."""

    @classmethod
    def first(cls, signature: Signature, event: LogEvent, text: str, offset: int, source: str, scope: Scope | None,
              evidence: dict[str, Any], line_no: int | None, order: tuple[int, int]) -> Occurrences:
        """The first occurrence: its cause and fixes filled with what it pulled from the log."""
        return cls(
            signature=signature,
            cause=_filled_text(signature.cause, evidence),
            pulled=evidence,
            remediation=_filled(_with_page(signature.remediation, evidence), {**evidence, **_log_placeholder(source)}),
            source=source,
            first_line_no=line_no,
            last_line_no=line_no,
            first_timestamp=event.timestamp,
            excerpt=_excerpt(text, offset),
            order=order,
            sources=[source],
            scope=scope or Scope(),
        )

    @property
    def location(self) -> str:
        if self.first_line_no:
            return f"{self.source}:{self.first_line_no}"
        return f"{self.source} at {self.first_timestamp}" if self.first_timestamp else self.source

    def finding(self) -> Finding:
        sig = self.signature
        facts = {"location": self.location, "source": self.source, "first_line_no": self.first_line_no,
                 "last_line_no": self.last_line_no, "first_timestamp": self.first_timestamp, "count": self.count,
                 "log_excerpt": list(self.excerpt), "layer": sig.layer, "sources": list(self.sources)}
        if self.other_errors:
            facts["other_error_lines"] = list(self.other_errors)
        return Finding(
            id=sig.id, kind=FindingKind.LOG, step=Step.LOGS, title=sig.title,
            status=Status.FAIL if sig.fatal else Status.WARN, severity=sig.severity,
            message=_message(self.cause, self.location, self.count),
            evidence={**self.pulled, **facts}, remediation=self.remediation, scope=self.scope,
        )


def where_found(finding: Finding) -> str:
    """Where a log finding was seen: ``train.log:12``, with the repeats (``train.log:12, 3 times``)."""
    count = int(finding.evidence.get("count") or 1)
    return str(finding.evidence.get("location", "")) + (f", {count} times" if count > 1 else "")


def cause_of(finding: Finding) -> str:
    """The cause a log finding's message tells, without the place it was seen."""
    prefix = f"{where_found(finding)}: "
    return finding.message[len(prefix):] if finding.message.startswith(prefix) else finding.message


def pulled_evidence(finding: Finding) -> dict[str, Any]:
    """The values the signature pulled from the log (and the node facts that explain it), without
    the facts every log finding carries (``DIAGNOSIS_FACTS``)."""
    return {k: v for k, v in finding.evidence.items() if k not in DIAGNOSIS_FACTS}


def _message(cause: str, location: str, count: int) -> str:
    """``train.log:12, 3 times: <cause>``: where first, as compilers print a diagnostic."""
    return f"{location}{f', {count} times' if count > 1 else ''}: {cause}"


class _Placeholders(dict):
    def __missing__(self, key: str) -> str:
        return f"<{key.upper()}>"


def _filled_text(text: str, evidence: Mapping[str, Any]) -> str:
    """A cause with the values from the log put in (``{failure}`` -> the failing line)."""
    if "{" not in text:
        return text
    values = _Placeholders({k: v for k, v in evidence.items() if isinstance(v, (str, int, float))})
    return text.format_map(values)


def _log_placeholder(source: str) -> dict[str, str]:
    """``{log}`` in a fix command: the log file it was found in, ready for a shell; none (``<LOG>``) for Cloud
    Logging or standard input, which no command can reopen."""
    if not source or source.startswith("cloud-logging:") or source.startswith("<"):
        return {}
    import shlex

    return {"log": shlex.quote(source)}


def _filled(fix: Remediation, evidence: Mapping[str, Any]) -> Remediation:
    """Fix commands with the numbers and names from the log put in (``kill {pid}`` -> ``kill 4242``)."""
    if not any("{" in c for c in fix.commands):
        return fix
    values = _Placeholders({k: v for k, v in evidence.items() if isinstance(v, (str, int, float))})
    return dataclasses.replace(fix, commands=tuple(c.format_map(values) for c in fix.commands))


def _with_page(fix: Remediation, evidence: Mapping[str, Any]) -> Remediation:
    """The page of XLA's error catalog for the event's own code as the docs (one signature may carry two codes)."""
    page = evidence.get("xla_error_page")
    return dataclasses.replace(fix, docs_url=page) if page and page != fix.docs_url else fix


def _excerpt(text: str, offset: int) -> list[str]:
    """The matched line with a little context, capped so evidence stays small."""
    lines = text.split("\n")
    at = text.count("\n", 0, offset)
    start = max(0, at - 2)
    return [line[:300] for line in lines[start : start + EXCERPT_LINES]]


def explain_with_node(
    diagnoses: list[Finding], node: Mapping[str, Any] | None, *, catalog: Catalog | None = None
) -> list[Finding]:
    """Retell findings that the node's own state explains (step 1's ``tpu.node`` fact).

    Returns new objects; a finding the node explains keeps its place (time order) and gains
    ``node_state``/``node_health``/``node_symptoms`` evidence.
    """
    if not node:
        return list(diagnoses)
    catalog = catalog or load_catalog()
    node = dict(node)
    symptoms = [str(s.get("type")) for s in node.get("symptoms") or [] if isinstance(s, dict)]
    fields = {"state": node.get("state") or "", "health": node.get("health") or "",
              "symptoms": ", ".join(symptoms) or "none"}
    out = []
    for finding in diagnoses:
        join = next((j for j in catalog.node_joins if j.applies(finding.id, node)), None)
        if join is None:
            out.append(finding)
            continue
        evidence = dict(finding.evidence)
        evidence.update({"node_state": fields["state"], "node_health": fields["health"] or None,
                         "node_symptoms": symptoms, "log_signature": finding.id})
        out.append(dataclasses.replace(
            finding,
            title=join.title,
            message=f"{where_found(finding)}: {join.cause.format(**fields)}",
            evidence=evidence,
            remediation=join.remediation if join.remediation and join.remediation.text else finding.remediation,
        ))
    return out
