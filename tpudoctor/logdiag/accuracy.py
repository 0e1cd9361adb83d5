"""Scores the log diagnosis against a labelled corpus of real failure logs.

The manifest (TOML) lists ``[[log]]`` entries: ``file``, ``url`` (the thread it follows), ``class``
(the signature id that must come first, or ``"none"`` when nothing fatal happened), ``cause``
(what the thread settled on), ``tuned`` (false: held out from tuning) and ``healthy`` (a run that
worked). Top-1 is the first diagnosis, or ``"none"`` when there is none.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tpudoctor.findings import Status
from tpudoctor.logdiag.catalog import Catalog
from tpudoctor.logdiag.diagnose import diagnose_file

NO_DIAGNOSIS = "none"
OUTCOME_UNKNOWN = "outcome-unknown"
"""A short excerpt that cannot tell: an abstention, a WARN that is no alarm (and, for a failed run, no PASS)."""


@dataclasses.dataclass(frozen=True)
class LabelledLog:
    file: Path
    url: str
    expected: str
    cause: str
    tuned: bool
    healthy: bool = False


@dataclasses.dataclass(frozen=True)
class ScoredLog:
    log: LabelledLog
    predicted: str
    predicted_status: str | None
    """FAIL or WARN of the top diagnosis; None when there is none."""

    @property
    def correct(self) -> bool:
        return self.predicted == self.log.expected


@dataclasses.dataclass(frozen=True)
class ClassScore:
    name: str
    support: int
    """Logs whose expected class this is."""
    predicted: int
    """Logs given this class as top-1."""
    correct: int

    @property
    def precision(self) -> float | None:
        return self.correct / self.predicted if self.predicted else None

    @property
    def recall(self) -> float | None:
        return self.correct / self.support if self.support else None


@dataclasses.dataclass(frozen=True)
class AccuracyReport:
    scored: tuple[ScoredLog, ...]

    def _accuracy(self, logs: list[ScoredLog]) -> float:
        return sum(s.correct for s in logs) / len(logs) if logs else float("nan")

    @property
    def top1_accuracy(self) -> float:
        return self._accuracy(list(self.scored))

    @property
    def top1_accuracy_untuned(self) -> float:
        return self._accuracy([s for s in self.scored if not s.log.tuned])

    @property
    def top1_accuracy_tuned(self) -> float:
        return self._accuracy([s for s in self.scored if s.log.tuned])

    @property
    def healthy(self) -> list[ScoredLog]:
        return [s for s in self.scored if s.log.healthy]

    @property
    def failing(self) -> list[ScoredLog]:
        return [s for s in self.scored if not s.log.healthy]

    @property
    def failing_called_pass(self) -> list[ScoredLog]:
        """The worst miss: a failed run with no finding at all."""
        return [s for s in self.failing if s.predicted == NO_DIAGNOSIS]

    @property
    def healthy_alarms(self) -> list[ScoredLog]:
        """Healthy runs given a finding (WARN or FAIL) other than "cannot tell" (``outcome-unknown``)."""
        return [s for s in self.healthy if s.predicted not in (NO_DIAGNOSIS, OUTCOME_UNKNOWN)]

    @property
    def unknown(self) -> list[ScoredLog]:
        """Logs the diagnosis said it cannot tell about (short excerpts with no failure and no sign of health)."""
        return [s for s in self.scored if s.predicted == OUTCOME_UNKNOWN]

    @property
    def healthy_fail_rate(self) -> float:
        """False alarms: healthy runs whose top diagnosis is a FAIL."""
        healthy = self.healthy
        return sum(s.predicted_status == Status.FAIL.value for s in healthy) / len(healthy) if healthy else 0.0

    @property
    def healthy_warn_rate(self) -> float:
        healthy = self.healthy
        return sum(s.predicted_status == Status.WARN.value for s in healthy) / len(healthy) if healthy else 0.0

    def per_class(self) -> list[ClassScore]:
        names = sorted({s.log.expected for s in self.scored} | {s.predicted for s in self.scored})
        return [
            ClassScore(
                name=name,
                support=sum(s.log.expected == name for s in self.scored),
                predicted=sum(s.predicted == name for s in self.scored),
                correct=sum(s.correct and s.predicted == name for s in self.scored),
            )
            for name in names
        ]

    def misses(self) -> list[ScoredLog]:
        return [s for s in self.scored if not s.correct]


FROZEN_FILE = "FROZEN.sha256"


def frozen_problem(folder: str | Path) -> str | None:
    """Why a frozen set no longer matches the hashes it was frozen with (a file changed, added or
    removed), or None when every file is as frozen."""
    folder = Path(folder)
    listed: dict[str, str] = {}
    for line in (folder / FROZEN_FILE).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split(maxsplit=1)
            listed[name.strip()] = digest
    present = {p.name for p in folder.iterdir() if p.suffix == ".log" or p.name == "manifest.toml"}
    if present != set(listed):
        return f"files added or removed since it was frozen: {sorted(present ^ set(listed))}"
    changed = [name for name, digest in listed.items()
               if hashlib.sha256((folder / name).read_bytes()).hexdigest() != digest]
    return f"changed since it was frozen: {changed}" if changed else None


def relabelled(folder: Path) -> dict[str, str]:
    """A frozen set's later labels (``[relabelled]`` in its FIRST_SCORE.toml: ``"h2_03" = { class = ..., why =
    ... }``): a log labelled ``unrecognised-failure`` because no signature had its cause, once one has. The
    manifest stays as it was labelled blind; the first score does not change."""
    first = folder / "FIRST_SCORE.toml"
    if not first.exists():
        return {}
    table = tomllib.loads(first.read_text(encoding="utf-8")).get("relabelled", {})
    return {prefix: entry["class"] for prefix, entry in table.items()}


def load_corpus(manifest: str | Path) -> list[LabelledLog]:
    manifest = Path(manifest)
    data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    later = relabelled(manifest.parent)
    return [
        LabelledLog(
            file=manifest.parent / entry["file"],
            url=entry["url"],
            expected=next((c for prefix, c in later.items() if entry["file"].startswith(prefix + "_")), entry["class"]),
            cause=entry["cause"],
            tuned=bool(entry["tuned"]),
            healthy=bool(entry.get("healthy", False)),
        )
        for entry in data.get("log", [])
    ]


def score_corpus(logs: list[LabelledLog], *, catalog: Catalog | None = None) -> AccuracyReport:
    scored = []
    for log in logs:
        found = diagnose_file(log.file, catalog=catalog)
        top = found[0] if found else None
        scored.append(ScoredLog(log, top.id if top else NO_DIAGNOSIS, top.status.value if top else None))
    return AccuracyReport(tuple(scored))
