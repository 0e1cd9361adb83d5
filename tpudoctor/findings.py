"""The finding model: what a check reports and what a ``check`` run produces.

Plain dataclasses with ``to_dict``/``from_dict`` so that every renderer, the JSON schema and
``tpudoctor compare`` read the same shape.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
from collections.abc import Iterable, Mapping
from typing import Any

SCHEMA_VERSION = "1.0"


class Status(str, enum.Enum):
    """Outcome of one check.

    ERROR means the check itself could not run or crashed; it says nothing about the user's
    system (flutter doctor's "crash", pytest's "error" as opposed to "failure").
    """

    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"
    ERROR = "ERROR"

    @property
    def rank(self) -> int:
        """Badness, for sorting and for the fail level: FAIL > ERROR > WARN > SKIP > PASS."""
        return _STATUS_RANK[self]


_STATUS_RANK = {Status.PASS: 0, Status.SKIP: 1, Status.WARN: 2, Status.ERROR: 3, Status.FAIL: 4}


class Severity(str, enum.Enum):
    """How bad a FAIL or WARN of this check is for the job."""

    INFO = "info"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class Step(enum.IntEnum):
    """The five triage steps, in the order a TPU engineer walks them."""

    NODE = 1
    GCS = 2
    RUNTIME = 3
    LOGS = 4
    REFERENCE = 5

    @property
    def label(self) -> str:
        return _STEP_LABELS[self]


_STEP_LABELS = {
    Step.NODE: "Node state and resources",
    Step.GCS: "GCS paths and permissions",
    Step.RUNTIME: "Framework and runtime compatibility",
    Step.LOGS: "Logs",
    Step.REFERENCE: "Minimal reference model",
}


@dataclasses.dataclass(frozen=True)
class Remediation:
    """What to do: prose apart from the commands a person can copy (brew's Finding::Remediation)."""

    text: str = ""
    commands: tuple[str, ...] = ()
    docs_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "commands": list(self.commands), "docs_url": self.docs_url}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Remediation | None:
        if not data:
            return None
        return cls(
            text=data.get("text", ""),
            commands=tuple(data.get("commands", ())),
            docs_url=data.get("docs_url"),
        )


@dataclasses.dataclass
class CheckResult:
    check_id: str
    step: Step
    title: str
    status: Status
    message: str
    severity: Severity = Severity.MEDIUM
    evidence: dict[str, Any] = dataclasses.field(default_factory=dict)
    remediation: Remediation | None = None
    skip_reason: str | None = None
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "check_id": self.check_id,
            "step": int(self.step),
            "title": self.title,
            "status": self.status.value,
            "severity": self.severity.value,
            "message": self.message,
            "evidence": _jsonable(self.evidence),
            "remediation": self.remediation.to_dict() if self.remediation else None,
            "skip_reason": self.skip_reason,
            "duration_s": round(self.duration_s, 6),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        return cls(
            check_id=data["check_id"],
            step=Step(data["step"]),
            title=data["title"],
            status=Status(data["status"]),
            message=data["message"],
            severity=Severity(data.get("severity", "medium")),
            evidence=dict(data.get("evidence") or {}),
            remediation=Remediation.from_dict(data.get("remediation")),
            skip_reason=data.get("skip_reason"),
            duration_s=float(data.get("duration_s", 0.0)),
        )


@dataclasses.dataclass
class Target:
    """What was checked, in gcloud's terms."""

    project: str | None = None
    zone: str | None = None
    tpu: str | None = None
    worker: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Summary:
    counts: dict[str, int]
    root_cause: str | None
    """Check id of the first problem in triage order, or None when nothing failed."""

    def to_dict(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "root_cause": self.root_cause}


def root_cause(results: Iterable[CheckResult]) -> CheckResult | None:
    """The first FAIL in triage order (earliest step, then highest severity), else the first ERROR.

    A later failure is usually a consequence of an earlier one, so the earliest step wins.
    """
    ordered = list(results)
    for wanted in (Status.FAIL, Status.ERROR):
        hits = [(i, r) for i, r in enumerate(ordered) if r.status is wanted]
        if hits:
            return min(hits, key=lambda ir: (int(ir[1].step), -ir[1].severity.rank, ir[0]))[1]
    return None


def summarize(results: Iterable[CheckResult]) -> Summary:
    results = list(results)
    counts = {s.value: 0 for s in Status}
    for r in results:
        counts[r.status.value] += 1
    cause = root_cause(results)
    return Summary(counts=counts, root_cause=cause.check_id if cause else None)


@dataclasses.dataclass
class Report:
    results: list[CheckResult]
    target: Target = dataclasses.field(default_factory=Target)
    host: str = ""
    started_at: _dt.datetime = dataclasses.field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc)
    )
    duration_s: float = 0.0
    tool_version: str = ""
    schema_version: str = SCHEMA_VERSION
    redacted: bool = False

    @property
    def summary(self) -> Summary:
        return summarize(self.results)

    def ordered_results(self) -> list[CheckResult]:
        """Results in triage order (step, then as run)."""
        return sorted(self.results, key=lambda r: int(r.step))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "kind": "check",
            "tool": {"name": "tpudoctor", "version": self.tool_version},
            "target": self.target.to_dict(),
            "host": self.host,
            "started_at": self.started_at.isoformat(),
            "duration_s": round(self.duration_s, 6),
            "redacted": self.redacted,
            "results": [r.to_dict() for r in self.ordered_results()],
            "summary": self.summary.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        return cls(
            results=[CheckResult.from_dict(r) for r in data.get("results", [])],
            target=Target(**(data.get("target") or {})),
            host=data.get("host", ""),
            started_at=_dt.datetime.fromisoformat(data["started_at"]),
            duration_s=float(data.get("duration_s", 0.0)),
            tool_version=(data.get("tool") or {}).get("version", ""),
            schema_version=data.get("schema_version", SCHEMA_VERSION),
            redacted=bool(data.get("redacted", False)),
        )


def _jsonable(value: Any) -> Any:
    """Evidence may hold tuples, enums, paths or numpy scalars; JSON needs plain types."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if hasattr(value, "item"):  # numpy scalar
        return value.item()
    return str(value)
