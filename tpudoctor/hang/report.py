"""The hang report: data only (every renderer formats this, and its JSON is the document the pod fan-out
merges). Schema: ``tpudoctor/schema/hang_report.schema.json``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any

from tpudoctor.findings import Finding, Target
from tpudoctor.hang.digest import HangDigest
from tpudoctor.hang.model import Frame, ProcessCapture

SCHEMA_VERSION = "1.1"  # 1.1: groups[].progress_counts
DOCUMENT_KIND = "hang"
VERDICTS = ("hung", "progressing", "unknown", "no_process")
DECISIONS = ("RESTART", "FIX CODE", "REPLACE HOST")
STACK_DUMPS_SOURCE = "stack dumps"
"""``environment["source"]`` of a report read from pasted dumps (``--stacks``), then ``: FILES``."""


def _iso(value: _dt.datetime | None) -> str | None:
    return value.isoformat() if value else None


def _time(value: str | None) -> _dt.datetime | None:
    return _dt.datetime.fromisoformat(value) if value else None


@dataclasses.dataclass
class ProcessState:
    """Where one process stands and whether it moved."""

    worker: str | None
    pid: int
    host: str
    category: str
    """A ``tpudoctor.hang.rule.Category`` value."""
    rule: str | None
    frame: Frame | None
    """Where it stands: the frame the deciding rule named."""
    thread: str
    detail: str
    progress: str
    """``moving``, ``frozen``, ``unknown`` or ``gone``."""
    progress_why: str
    signature: str
    """Its training thread's stack, normalised (library line numbers aside): processes group by it."""
    stack: list[Frame]
    """The training thread's Python frames (last sample), innermost first."""
    native: list[Frame] = dataclasses.field(default_factory=list)
    context: str | None = None
    """A category of an outer frame (a lock wait inside the data loader: ``data``)."""
    last_step: float | None = None
    last_step_at: _dt.datetime | None = None
    seconds_per_step: float | None = None
    steps_per_s: float | None = None
    cpu_percent: float | None = None
    state: str | None = None
    """The kernel's process state letter (R, S, D, T, Z)."""

    @property
    def label(self) -> str:
        return f"worker {self.worker} pid {self.pid}" if self.worker is not None else f"pid {self.pid}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "worker": self.worker, "pid": self.pid, "host": self.host, "category": self.category, "rule": self.rule,
            "frame": self.frame.to_dict() if self.frame else None, "thread": self.thread, "detail": self.detail,
            "progress": self.progress, "progress_why": self.progress_why, "signature": self.signature,
            "stack": [f.to_dict() for f in self.stack], "native": [f.to_dict() for f in self.native],
            "context": self.context, "last_step": self.last_step, "last_step_at": _iso(self.last_step_at),
            "seconds_per_step": self.seconds_per_step, "steps_per_s": self.steps_per_s,
            "cpu_percent": self.cpu_percent, "state": self.state,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProcessState:
        return cls(
            worker=data.get("worker"), pid=int(data["pid"]), host=data.get("host") or "", category=data["category"],
            rule=data.get("rule"), frame=Frame.from_dict(data["frame"]) if data.get("frame") else None,
            thread=data.get("thread") or "", detail=data.get("detail") or "", progress=data["progress"],
            progress_why=data.get("progress_why") or "", signature=data.get("signature") or "",
            stack=[Frame.from_dict(f) for f in data.get("stack") or []],
            native=[Frame.from_dict(f) for f in data.get("native") or []], context=data.get("context"),
            last_step=data.get("last_step"), last_step_at=_time(data.get("last_step_at")),
            seconds_per_step=data.get("seconds_per_step"), steps_per_s=data.get("steps_per_s"),
            cpu_percent=data.get("cpu_percent"), state=data.get("state"),
        )


@dataclasses.dataclass
class StackGroup:
    """Processes whose training threads stand at the same place."""

    category: str
    signature: str
    members: list[tuple[str | None, int]]
    """(worker, pid)."""
    stack: list[Frame]
    thread: str
    odd_one_out: bool = False
    progress_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    """How many members are ``moving``, ``frozen``, ... (ProcessState.progress); none where the group's category
    has no stack to judge (unknown, gone)."""

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "signature": self.signature,
                "members": [{"worker": w, "pid": p} for w, p in self.members],
                "stack": [f.to_dict() for f in self.stack], "thread": self.thread, "odd_one_out": self.odd_one_out,
                "progress_counts": self.progress_counts}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StackGroup:
        return cls(category=data["category"], signature=data["signature"], members=_members(data["members"]),
                   stack=[Frame.from_dict(f) for f in data["stack"]], thread=data["thread"],
                   odd_one_out=bool(data.get("odd_one_out")), progress_counts=dict(data["progress_counts"]))


def _members(rows: list[dict[str, Any]]) -> list[tuple[str | None, int]]:
    return [(row.get("worker"), int(row["pid"])) for row in rows]


@dataclasses.dataclass
class Decision:
    action: str
    """One of ``DECISIONS``."""
    confidence: str
    """``high``, ``medium`` or ``low``."""
    why: str
    text: str
    commands: list[str]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Decision:
        return cls(action=data["action"], confidence=data["confidence"], why=data["why"], text=data["text"],
                   commands=list(data["commands"]))


@dataclasses.dataclass
class RootCause:
    category: str
    headline: str
    """One sentence: who stands where, and who waits for it."""
    members: list[tuple[str | None, int]]
    hosts: list[str]
    frame: Frame | None
    detail: str
    waiting: int
    """How many other processes wait for it."""
    waiting_workers: list[str]
    stalled_since: _dt.datetime | None
    """The last time the job moved, as far as the logs (or the samples) tell."""
    evidence: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "headline": self.headline,
                "members": [{"worker": w, "pid": p} for w, p in self.members], "hosts": list(self.hosts),
                "frame": self.frame.to_dict() if self.frame else None, "detail": self.detail, "waiting": self.waiting,
                "waiting_workers": list(self.waiting_workers), "stalled_since": _iso(self.stalled_since),
                "evidence": self.evidence}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RootCause:
        return cls(category=data["category"], headline=data["headline"], members=_members(data["members"]),
                   hosts=list(data["hosts"]), frame=Frame.from_dict(data["frame"]) if data.get("frame") else None,
                   detail=data["detail"], waiting=int(data["waiting"]),
                   waiting_workers=list(data["waiting_workers"]), stalled_since=_time(data.get("stalled_since")),
                   evidence=dict(data.get("evidence") or {}))


@dataclasses.dataclass
class HangReport:
    verdict: str
    """One of ``VERDICTS``."""
    verdict_why: str
    confidence: str
    target: Target
    host: str
    started_at: _dt.datetime
    interval_s: float
    samples: int
    processes: list[ProcessState]
    groups: list[StackGroup]
    findings: list[Finding]
    root_cause: RootCause | None = None
    decision: Decision | None = None
    steps_per_s: float | None = None
    digests: list[HangDigest] = dataclasses.field(default_factory=list)
    captures: list[ProcessCapture] = dataclasses.field(default_factory=list)
    workers: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """For a pod: worker -> {status: reported | no_report | no_process, source, host}."""
    duration_s: float = 0.0
    tool_version: str = ""
    environment: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def is_pod(self) -> bool:
        return bool(self.workers)

    @property
    def from_stack_dumps(self) -> bool:
        """Read from dumps someone already took (``--stacks``), not from live processes."""
        return str(self.environment.get("source", "")).startswith(STACK_DUMPS_SOURCE)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": DOCUMENT_KIND,
            "tool": {"name": "tpudoctor", "version": self.tool_version},
            "target": self.target.to_dict(),
            "host": self.host,
            "started_at": self.started_at.isoformat(),
            "duration_s": round(self.duration_s, 3),
            "interval_s": self.interval_s,
            "samples": self.samples,
            "verdict": self.verdict,
            "verdict_why": self.verdict_why,
            "confidence": self.confidence,
            "steps_per_s": self.steps_per_s,
            "root_cause": self.root_cause.to_dict() if self.root_cause else None,
            "decision": self.decision.to_dict() if self.decision else None,
            "groups": [g.to_dict() for g in self.groups],
            "processes": [p.to_dict() for p in self.processes],
            "digests": [d.to_dict() for d in self.digests],
            "findings": [f.to_dict() for f in self.findings],
            "workers": self.workers,
            "environment": self.environment,
            "captures": [c.to_dict() for c in self.captures],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HangReport:
        """The report a document holds (``to_dict``'s inverse): the renderers format the prepared document
        (``tpudoctor.documents.hang_document``) read back, so every format shows what the JSON says."""
        return cls(
            verdict=data["verdict"], verdict_why=data["verdict_why"], confidence=data["confidence"],
            target=Target(**(data.get("target") or {})), host=data.get("host") or "",
            started_at=_dt.datetime.fromisoformat(data["started_at"]), interval_s=float(data["interval_s"]),
            samples=int(data["samples"]), processes=[ProcessState.from_dict(p) for p in data["processes"]],
            groups=[StackGroup.from_dict(g) for g in data["groups"]],
            findings=[Finding.from_dict(f) for f in data["findings"]],
            root_cause=RootCause.from_dict(data["root_cause"]) if data.get("root_cause") else None,
            decision=Decision.from_dict(data["decision"]) if data.get("decision") else None,
            steps_per_s=data.get("steps_per_s"), digests=[HangDigest.from_dict(d) for d in data["digests"]],
            captures=[ProcessCapture.from_dict(c) for c in data["captures"]],
            workers={worker: dict(row) for worker, row in (data.get("workers") or {}).items()},
            duration_s=float(data.get("duration_s") or 0.0), tool_version=(data.get("tool") or {}).get("version", ""),
            environment=dict(data.get("environment") or {}),
        )
