"""From log events to diagnoses: match signatures, pull numbers, count repeats, rank root cause first.

Ranking: the first fatal error in time is the root cause; fatal errors that follow are
listed after it in the order they first appeared (they are usually consequences), and
non-fatal warnings come last and stay WARN.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tpudoctor.findings import Remediation, Severity, Status
from tpudoctor.logdiag.catalog import Catalog, Signature, load_catalog
from tpudoctor.logdiag.events import LogEvent, bounded_lines, group_events
from tpudoctor.logdiag.parsers import PARSERS

EXCERPT_LINES = 8
BATCH_LINES = 4096
MAX_SOURCES_LISTED = 10


@dataclasses.dataclass
class Diagnosis:
    """One recognised failure, aggregated over all its occurrences."""

    signature_id: str
    title: str
    cause: str
    status: Status
    severity: Severity
    evidence: dict[str, Any]
    remediation: Remediation
    count: int = 1
    first_line_no: int | None = None
    last_line_no: int | None = None
    source: str = "<text>"
    first_timestamp: str | None = None
    excerpt: list[str] = dataclasses.field(default_factory=list)
    layer: str = "runtime"
    sources: list[str] = dataclasses.field(default_factory=list)
    order: tuple[int, int] = (0, 0)
    """(event sequence, line) of the first occurrence, for ranking across sources."""

    @property
    def fatal(self) -> bool:
        return self.status is Status.FAIL

    @property
    def location(self) -> str:
        if self.first_line_no:
            return f"{self.source}:{self.first_line_no}"
        return f"{self.source} at {self.first_timestamp}" if self.first_timestamp else self.source

    def to_dict(self) -> dict[str, Any]:
        return {
            "signature_id": self.signature_id,
            "title": self.title,
            "cause": self.cause,
            "status": self.status.value,
            "severity": self.severity.value,
            "evidence": dict(self.evidence),
            "remediation": self.remediation.to_dict(),
            "count": self.count,
            "first_line_no": self.first_line_no,
            "last_line_no": self.last_line_no,
            "source": self.source,
            "first_timestamp": self.first_timestamp,
            "excerpt": list(self.excerpt),
            "layer": self.layer,
            "sources": list(self.sources),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Diagnosis:
        return cls(
            signature_id=data["signature_id"],
            title=data["title"],
            cause=data.get("cause", ""),
            status=Status(data["status"]),
            severity=Severity(data.get("severity", "high")),
            evidence=dict(data.get("evidence") or {}),
            remediation=Remediation.from_dict(data.get("remediation")) or Remediation(),
            count=int(data.get("count", 1)),
            first_line_no=data.get("first_line_no"),
            last_line_no=data.get("last_line_no"),
            source=data.get("source", "<text>"),
            first_timestamp=data.get("first_timestamp"),
            excerpt=list(data.get("excerpt") or []),
            layer=data.get("layer", "runtime"),
            sources=list(data.get("sources") or []),
        )


class Diagnoser:
    """Feed it events from one or more sources, then ask for the ranked diagnoses.

    Memory stays bounded: one aggregate per signature, whatever the log's length.
    """

    def __init__(self, catalog: Catalog | None = None):
        self.catalog = catalog or load_catalog()
        self._found: dict[str, Diagnosis] = {}
        self._context: dict[str, Any] = {}  # latest value of each catalog context (bounded: one per name)
        self._sequence = 0
        self.events_scanned = 0
        self.lines_scanned = 0

    def feed(self, events: Iterable[LogEvent], source: str) -> None:
        """Pre-grouped events (Cloud Logging entries, say)."""
        for event in events:
            self._scan(event, source, self.catalog.may_match(event.text))

    def feed_lines(self, lines: Iterable[str], source: str) -> None:
        """Raw lines, streamed. Lines are pre-filtered in batches: one substring pass over a
        batch decides whether any event touching it can match, which keeps a 1 GB log fast."""
        hot: collections.deque[tuple[int, int]] = collections.deque()

        def batches() -> Iterator[str]:
            batch: list[str] = []
            first = 1
            for line in lines:
                batch.append(line)
                if len(batch) == BATCH_LINES:
                    if self.catalog.may_match("\n".join(batch)):
                        hot.append((first, first + len(batch) - 1))
                    yield from batch
                    first += len(batch)
                    batch = []
            if batch and self.catalog.may_match("\n".join(batch)):
                hot.append((first, first + len(batch) - 1))
            yield from batch

        for event in group_events(batches()):
            while hot and hot[0][1] < event.first_line_no:
                hot.popleft()
            is_hot = bool(hot) and hot[0][0] <= event.last_line_no
            self._scan(event, source, is_hot and self.catalog.may_match(event.text))

    def _scan(self, event: LogEvent, source: str, candidate: bool) -> None:
        self.events_scanned += 1
        self.lines_scanned += event.last_line_no - event.first_line_no + 1
        self._sequence += 1
        if not candidate:
            return
        text = event.text
        for context in self.catalog.contexts:
            if context.keyword in text and (value := context.extract(text)) is not None:
                self._context[context.name] = value
        for signature, offset in self._matches(text):
            self._record(signature, event, text, offset, source)

    def _matches(self, text: str) -> list[tuple[Signature, int]]:
        hits: list[tuple[Signature, int]] = []
        folded = text.lower() if self.catalog.has_folded_keywords else None
        for signature in self.catalog.signatures:
            if signature.fallback:
                continue
            match = signature.first_match(text, folded)
            if match is not None:
                hits.append((signature, match.start()))
        if not hits:  # nothing known: is it a crash all the same?
            for signature in self.catalog.signatures:
                if signature.fallback and (match := signature.first_match(text, folded)) is not None:
                    return [(signature, match.start())]
            return hits
        if len(hits) > 1:
            superseded = {sid for sig, _ in hits for sid in sig.supersedes}
            specific = [h for h in hits if not h[0].wrapper]
            if specific:
                hits = [h for h in specific if h[0].id not in superseded]
            else:  # only generic wrappers: the most telling one
                hits = [max(hits, key=lambda h: h[0].priority)]
        return hits

    def _record(self, signature: Signature, event: LogEvent, text: str, offset: int, source: str) -> None:
        evidence = signature.evidence(text)
        for name in signature.parsers:
            for key, value in PARSERS[name](text, offset).items():
                evidence.setdefault(key, value)
        for name in signature.context:
            if name in self._context:
                evidence.setdefault(name, self._context[name])
        pair = signature.suppress_when_equal
        if pair and all(k in evidence for k in pair) and len({evidence[k] for k in pair}) == 1:
            return
        line_no = event.line_no_at(offset) if event.numbered else None
        known = self._found.get(signature.id)
        if known is not None:
            known.count += 1
            known.last_line_no = line_no if known.source == source else known.last_line_no
            if source not in known.sources and len(known.sources) < MAX_SOURCES_LISTED:
                known.sources.append(source)
            for key, value in evidence.items():
                known.evidence.setdefault(key, value)
            return
        self._found[signature.id] = Diagnosis(
            signature_id=signature.id,
            title=signature.title,
            cause=_filled_text(signature.cause, evidence),
            status=Status.FAIL if signature.fatal else Status.WARN,
            severity=signature.severity,
            evidence=evidence,
            remediation=_filled(signature.remediation, evidence),
            count=1,
            first_line_no=line_no,
            last_line_no=line_no,
            source=source,
            first_timestamp=event.timestamp,
            excerpt=_excerpt(text, offset),
            layer=signature.layer,
            sources=[source],
            order=(self._sequence, line_no or 0),
        )

    def diagnoses(self) -> list[Diagnosis]:
        """Root cause first: fatal before non-fatal, then by first appearance.

        Within one source, appearance is line order. Across sources (one log per worker, say),
        it is the timestamp when every finding has one, since the files were fed one by one.
        """
        found = list(self._found.values())
        fallback = {s.id for s in self.catalog.signatures if s.fallback}
        if any(d.fatal for d in found):  # a known root cause: an unrecognised crash is its consequence
            found = [d for d in found if d.signature_id not in fallback]
        keys = {id(d): time_key(d.first_timestamp) for d in found}
        by_time = len({d.source for d in found}) > 1 and all(keys.values())
        return sorted(found, key=lambda d: (not d.fatal, d.signature_id not in fallback,
                                            keys[id(d)] if by_time else "", d.order))


_ISO_TIME = re.compile(r"^\d{4}-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_GLOG_TIME = re.compile(r"^(\d\d)(\d\d)\s+(\d\d):(\d\d):(\d\d)(?:\.(\d+))?")


def time_key(timestamp: str | None) -> str | None:
    """A sortable ``MMDDhhmmss.ffffff`` from ISO or glog timestamps (glog has no year)."""
    if not timestamp:
        return None
    match = _ISO_TIME.match(timestamp) or _GLOG_TIME.match(timestamp)
    if match is None:
        return None
    month, day, hour, minute, second, fraction = match.groups()
    return f"{month}{day}{hour}{minute}{second}.{(fraction or '').ljust(6, '0')[:6]}"


class _Placeholders(dict):
    def __missing__(self, key: str) -> str:
        return f"<{key.upper()}>"


def _filled_text(text: str, evidence: Mapping[str, Any]) -> str:
    """A cause with the values from the log put in (``{failure}`` -> the failing line)."""
    if "{" not in text:
        return text
    values = _Placeholders({k: v for k, v in evidence.items() if isinstance(v, (str, int, float))})
    return text.format_map(values)


def _filled(fix: Remediation, evidence: Mapping[str, Any]) -> Remediation:
    """Fix commands with the numbers and names from the log put in (``kill {pid}`` -> ``kill 4242``)."""
    if not any("{" in c for c in fix.commands):
        return fix
    values = _Placeholders({k: v for k, v in evidence.items() if isinstance(v, (str, int, float))})
    return dataclasses.replace(fix, commands=tuple(c.format_map(values) for c in fix.commands))


def _excerpt(text: str, offset: int) -> list[str]:
    """The matched line with a little context, capped so evidence stays small."""
    lines = text.split("\n")
    at = text.count("\n", 0, offset)
    start = max(0, at - 2)
    return [line[:300] for line in lines[start : start + EXCERPT_LINES]]


def diagnose_lines(lines: Iterable[str], source: str = "<text>", *, catalog: Catalog | None = None) -> list[Diagnosis]:
    diagnoser = Diagnoser(catalog)
    diagnoser.feed_lines(lines, source)
    return diagnoser.diagnoses()


def diagnose_text(text: str, source: str = "<text>", *, catalog: Catalog | None = None) -> list[Diagnosis]:
    """Diagnose a whole log held in memory; ordered root cause first."""
    return diagnose_lines(io.StringIO(text), source, catalog=catalog)


def diagnose_file(path: str | Path, *, catalog: Catalog | None = None) -> list[Diagnosis]:
    """Stream a log file from disk line by line (bounded memory, any size)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return diagnose_lines(bounded_lines(handle), str(path), catalog=catalog)


def explain_with_node(
    diagnoses: list[Diagnosis], node: Mapping[str, Any] | None, *, catalog: Catalog | None = None
) -> list[Diagnosis]:
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
    for diagnosis in diagnoses:
        join = next((j for j in catalog.node_joins if j.applies(diagnosis.signature_id, node)), None)
        if join is None:
            out.append(diagnosis)
            continue
        evidence = dict(diagnosis.evidence)
        evidence.update({"node_state": fields["state"], "node_health": fields["health"] or None,
                         "node_symptoms": symptoms, "log_signature": diagnosis.signature_id})
        out.append(dataclasses.replace(
            diagnosis,
            title=join.title,
            cause=join.cause.format(**fields),
            evidence=evidence,
            remediation=join.remediation if join.remediation and join.remediation.text else diagnosis.remediation,
        ))
    return out
