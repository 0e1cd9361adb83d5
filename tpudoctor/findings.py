"""The finding model: one result type for every kind of finding, and what a ``check`` run produces.

A ``Finding`` is what a check, a log signature, a profile rule or the bench gate reports: the same
fields, the same status and severity vocabulary, and a ``Scope`` that says where it holds (which
workers, hosts or chips; empty for the whole node or job), so that reports from many workers merge.
Plain dataclasses with ``to_dict``/``from_dict`` so that every renderer, the JSON schema and
``tpudoctor compare`` read the same shape.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tpudoctor.exitcodes import ExitCode

SCHEMA_VERSION = "2.1"
READABLE_SCHEMA_MAJORS = ("1", "2")  # 1.x documents are upgraded on reading


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

PROBLEMS = frozenset({Status.FAIL, Status.ERROR, Status.WARN})
"""Statuses that say something needs a look; PASS and SKIP do not."""


def worst_status(statuses: Iterable[Status]) -> Status:
    """One status for many (one check on many workers, one step's checks): the worst problem if there is
    one; else PASS if anything passed; else SKIP (nothing ran, or nothing was given)."""
    seen = set(statuses)
    problems = seen & PROBLEMS
    if problems:
        return max(problems, key=lambda s: s.rank)
    return Status.PASS if Status.PASS in seen else Status.SKIP


FAIL_LEVELS = {"fail": frozenset({Status.FAIL, Status.ERROR}),
               "warn": frozenset({Status.FAIL, Status.ERROR, Status.WARN})}
"""``--fail-on``'s levels: the statuses that fail a run at each."""


@dataclasses.dataclass(frozen=True)
class Gate:
    """What fails a run: the one rule of every command's exit status (1) and of its JUnit (a ``<failure>``,
    an ``<error>`` for ERROR). A finding fails the run when its status is at or above ``fail_on``;
    ``fail_on=None`` gates no finding, only a threshold the command was given (``--min-ettr``); nothing fails
    with ``exit_zero``. A finding that does not fail the run is a passing testcase that says its status."""

    fail_on: str | None = "fail"
    exit_zero: bool = False

    def fails(self, status: Status, *, threshold: bool = False) -> bool:
        """``threshold``: the outcome of a threshold the user set (``--min-ettr``), judged at FAIL whatever
        ``fail_on`` says."""
        level = "fail" if threshold else self.fail_on
        return not self.exit_zero and level is not None and status in FAIL_LEVELS[level]


DEFAULT_GATE = Gate()
"""``--fail-on fail``: what a report fails on when its command says nothing else."""
THRESHOLD_GATE = Gate(fail_on=None)
"""No finding fails the run, only a threshold the user set (goodput's default: ``--min-ettr``)."""


def failing_findings(report: Any, gate: Gate) -> list[Finding]:
    """The findings of ``report`` that fail the run under ``gate``: a threshold's outcome
    (``threshold_results``: a goodput report's ``--min-ettr``), then the findings it is judged on."""
    thresholds = getattr(report, "threshold_results", None)
    if thresholds is not None:
        return ([f for f in thresholds if gate.fails(f.status, threshold=True)]
                + [f for f in report.findings if gate.fails(f.status)])
    return [f for f in judged_findings(report) if gate.fails(f.status)]


def exit_code_for(report: Any, *, fail_on: str | None = "fail", exit_zero: bool = False) -> ExitCode:
    """FINDINGS when a finding of ``report`` fails the run (``Gate``: at or above ``fail_on``; ``fail``: FAIL or
    ERROR; ``warn``: WARN too); OK otherwise, and always with ``exit_zero``. The one exit-status rule of every
    command's report, the same one its JUnit follows; the format never changes it."""
    return ExitCode.FINDINGS if failing_findings(report, Gate(fail_on, exit_zero)) else ExitCode.OK


def judged_findings(report: Any) -> Iterable[Finding]:
    """What a report's exit status is judged on: its ``results`` (a check report's results; a goodput,
    bench or compare report's gate outcome), else its ``findings`` (a hang report's; a profile report's
    findings that fired, its ``results`` being every rule's result per host, a mapping)."""
    results = getattr(report, "results", None)
    if results is not None and not isinstance(results, Mapping):
        return results
    return report.findings


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


class FindingKind(str, enum.Enum):
    """What produced a finding; renderers and merges treat all kinds alike."""

    CHECK = "check"
    LOG = "log"
    PROFILE = "profile"
    BENCH = "bench"
    GOODPUT = "goodput"
    HANG = "hang"
    MEMORY = "memory"
    DIAG = "diag"


@dataclasses.dataclass(frozen=True)
class Scope:
    """Where a finding holds. Empty means the whole node or job (a single-worker run, say)."""

    workers: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    chips: tuple[str, ...] = ()

    @property
    def is_whole(self) -> bool:
        return not (self.workers or self.hosts or self.chips)

    def union(self, other: Scope) -> Scope:
        return Scope(
            workers=_merged(self.workers, other.workers),
            hosts=_merged(self.hosts, other.hosts),
            chips=_merged(self.chips, other.chips),
        )

    def to_dict(self) -> dict[str, list[str]]:
        return {"workers": list(self.workers), "hosts": list(self.hosts), "chips": list(self.chips)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Scope:
        data = data or {}
        return cls(**{k: tuple(str(v) for v in data.get(k) or ()) for k in ("workers", "hosts", "chips")})

    @classmethod
    def of(cls, *, workers: Iterable[Any] = (), hosts: Iterable[Any] = (), chips: Iterable[Any] = ()) -> Scope:
        return cls(workers=_merged((), workers), hosts=_merged((), hosts), chips=_merged((), chips))


def _merged(left: Iterable[Any], right: Iterable[Any]) -> tuple[str, ...]:
    """Union in natural order."""
    values = {str(v) for v in (*left, *right)}
    return tuple(sorted(values, key=natural_key))


@functools.lru_cache(maxsize=8192)  # a merge sorts the same few names many times
def natural_key(name: str) -> tuple:
    """Natural order of worker and host names: ``2`` before ``10``, ``worker-2`` before ``worker-10``,
    numbers before names."""
    parts = _DIGITS.split(name)
    return tuple((0, int(part), "") if i % 2 else (1, 0, part) for i, part in enumerate(parts)), name


_DIGITS = re.compile(r"([0-9]+)")


def describe_workers(workers: Iterable[str], *, limit: int = 12) -> str:
    """``3, 7`` or ``0-15`` or ``0-3, 9, 12-20 and 4 more``: ranges folded, long lists cut."""
    ordered = sorted(set(workers), key=natural_key)
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        if ordered[i].isdigit():
            while j + 1 < len(ordered) and ordered[j + 1].isdigit() and int(ordered[j + 1]) == int(ordered[j]) + 1:
                j += 1
        if j - i >= 2:  # a run of three or more reads better as a range; "0, 1" stays a list
            parts.append(f"{ordered[i]}-{ordered[j]}")
            i = j + 1
        else:
            parts.append(ordered[i])
            i += 1
    if len(parts) > limit:
        return ", ".join(parts[:limit]) + f" and {len(parts) - limit} more"
    return ", ".join(parts)


class ConfidenceLevel(str, enum.Enum):
    """How sure a verdict or finding is, from the evidence it rests on: ``high`` only with strong
    evidence; ``unknown`` where the input cannot tell."""

    UNKNOWN = "unknown"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return list(ConfidenceLevel).index(self)

    def lowered(self) -> ConfidenceLevel:
        """One level down (never below low: what is known stays known)."""
        return self if self.rank <= 1 else list(ConfidenceLevel)[self.rank - 1]


@dataclasses.dataclass(frozen=True)
class Confidence:
    """How sure, and why: ``reasons`` one sentence each; ``basis`` the figures (step source, steps,
    coverage of the window, agreement between the evidence...)."""

    level: ConfidenceLevel
    reasons: tuple[str, ...] = ()
    basis: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level.value, "reasons": list(self.reasons), "basis": _jsonable(dict(self.basis))}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Confidence | None:
        if not data:
            return None
        return cls(ConfidenceLevel(data.get("level", "unknown")), tuple(str(r) for r in data.get("reasons") or ()),
                   dict(data.get("basis") or {}))


@dataclasses.dataclass
class Finding:
    """One result: a check's verdict, a log diagnosis, a profile rule's finding or the bench gate's.
    ``confidence``: how sure it is and why, where the finding judges evidence of uneven strength
    (profile findings); None for checks, whose result is what they observed."""

    id: str
    step: Step | None
    title: str
    status: Status
    message: str
    severity: Severity = Severity.MEDIUM
    evidence: dict[str, Any] = dataclasses.field(default_factory=dict)
    remediation: Remediation | None = None
    skip_reason: str | None = None
    duration_s: float = 0.0
    scope: Scope = dataclasses.field(default_factory=Scope)
    kind: FindingKind = FindingKind.CHECK
    confidence: Confidence | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "kind": self.kind.value,
            "step": int(self.step) if self.step is not None else None,
            "title": self.title,
            "status": self.status.value,
            "severity": self.severity.value,
            "message": self.message,
            "evidence": _jsonable(self.evidence),
            "remediation": self.remediation.to_dict() if self.remediation else None,
            "scope": self.scope.to_dict(),
            "skip_reason": self.skip_reason,
            "duration_s": round(self.duration_s, 6),
        }
        if self.confidence is not None:
            out["confidence"] = self.confidence.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        """Reads schema 2.x results and 1.x ones (``check_id``, no scope, no kind)."""
        step = data.get("step")
        return cls(
            id=data["id"] if "id" in data else data["check_id"],
            step=Step(step) if step is not None else None,
            title=data["title"],
            status=Status(data["status"]),
            message=data["message"],
            severity=Severity(data.get("severity", "medium")),
            evidence=dict(data.get("evidence") or {}),
            remediation=Remediation.from_dict(data.get("remediation")),
            skip_reason=data.get("skip_reason"),
            duration_s=float(data.get("duration_s", 0.0)),
            scope=Scope.from_dict(data.get("scope")),
            kind=FindingKind(data.get("kind", "check")),
            confidence=Confidence.from_dict(data.get("confidence")),
        )


CheckResult = Finding
"""The name checks have always used for their result; the same type as every other finding."""


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
            return min(hits, key=lambda ir: (_step_order(ir[1]), -ir[1].severity.rank, ir[0]))[1]
    return None


def _step_order(result: Finding) -> int:
    """Findings outside the triage chain (profile, bench) come after its five steps."""
    return int(result.step) if result.step is not None else len(Step) + 1


def summarize(results: Iterable[CheckResult]) -> Summary:
    results = list(results)
    counts = {s.value: 0 for s in Status}
    for r in results:
        counts[r.status.value] += 1
    cause = root_cause(results)
    return Summary(counts=counts, root_cause=cause.id if cause else None)


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
    environment: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Where the run happened (worker, package versions), so reports from many workers can be merged."""

    @property
    def summary(self) -> Summary:
        return summarize(self.results)

    def ordered_results(self) -> list[CheckResult]:
        """Results in triage order (step, then as run)."""
        return sorted(self.results, key=_step_order)

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
            "environment": _jsonable(self.environment),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        return cls(
            results=[Finding.from_dict(r) for r in data.get("results", [])],
            target=Target(**(data.get("target") or {})),
            host=data.get("host", ""),
            started_at=_dt.datetime.fromisoformat(data["started_at"]),
            duration_s=float(data.get("duration_s", 0.0)),
            tool_version=(data.get("tool") or {}).get("version", ""),
            schema_version=SCHEMA_VERSION,  # read documents are upgraded to this shape
            redacted=bool(data.get("redacted", False)),
            environment=dict(data.get("environment") or {}),
        )


def upgrade_check_report_v1(document: dict[str, Any]) -> dict[str, Any]:
    """A 1.x check report in the 2.0 shape: ``check_id`` becomes ``id``, each result gets a kind and an
    empty scope (a 1.x report always came from one worker)."""
    results = []
    for result in document.get("results") or []:
        if not isinstance(result, Mapping):
            raise TypeError("a result is not an object")
        upgraded = {k: v for k, v in result.items() if k != "check_id"}
        upgraded.setdefault("id", result.get("check_id"))
        upgraded.setdefault("kind", FindingKind.CHECK.value)
        upgraded.setdefault("scope", Scope().to_dict())
        results.append(upgraded)
    return {**document, "schema_version": SCHEMA_VERSION, "results": results}


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
