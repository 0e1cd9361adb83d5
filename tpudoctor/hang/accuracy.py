"""Score ``tpudoctor hang --stacks`` on a labelled set of real stack dumps (tests/data/hang/heldout): for
each thread's dumps, where tpudoctor says the stuck process stands against the thread's label, whether it
names an odd one out, and whether every file parsed. Data only; benchmarks/ prints it."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tpudoctor.errors import InputError
from tpudoctor.findings import Target
from tpudoctor.hang.analyze import analyze
from tpudoctor.hang.textdump import read_stack_files


@dataclasses.dataclass
class SetResult:
    name: str
    label: str
    said: str
    """The category tpudoctor gives the stuck process (``parse-failure`` when a file did not parse)."""
    confidence: str
    odd_one_out_named: bool
    odd_one_out_expected: str
    parse_error: str = ""

    @property
    def category_right(self) -> bool | None:
        """None for a set the thread never settled (``unknown``): scored for parsing only."""
        if self.label == "unknown":
            return None
        return self.said == self.label

    @property
    def odd_one_out_right(self) -> bool:
        return self.odd_one_out_named == bool(self.odd_one_out_expected)


@dataclasses.dataclass
class StacksAccuracy:
    sets: list[SetResult]

    @property
    def labelled(self) -> int:
        return sum(1 for s in self.sets if s.label != "unknown")

    @property
    def category_right(self) -> int:
        return sum(1 for s in self.sets if s.category_right)

    @property
    def odd_one_out_right(self) -> int:
        return sum(1 for s in self.sets if s.odd_one_out_right)

    @property
    def parse_failures(self) -> int:
        return sum(1 for s in self.sets if s.parse_error)

    @property
    def unknown_given_high(self) -> int:
        """Unsettled threads that tpudoctor nonetheless placed with high confidence."""
        return sum(1 for s in self.sets if s.label == "unknown" and s.confidence == "high")


def score_set(folder: Path) -> SetResult:
    manifest = tomllib.loads((folder / "manifest.toml").read_text(encoding="utf-8"))
    files = [str(folder / name) for name in manifest.get("workers", {})]
    label, expected = str(manifest["label"]), str(manifest.get("odd_one_out") or "")
    try:
        captures = read_stack_files([files])
    except InputError as exc:
        return SetResult(folder.name, label, "parse-failure", "", False, expected, parse_error=str(exc))
    report = analyze(captures, target=Target(), host="",
                     started_at=_dt.datetime.now(_dt.timezone.utc), interval_s=0.0, samples=1)
    stuck = _stuck_state(report)
    said = stuck.category if stuck else "unknown"
    confidence = report.decision.confidence if report.decision else report.confidence
    return SetResult(folder.name, label, said, confidence, any(g.odd_one_out for g in report.groups), expected)


def _stuck_state(report):
    """The process the root cause names; else the first one placed anywhere but ``unknown``."""
    if report.root_cause is not None:
        members = set(report.root_cause.members)
        named = [s for s in report.processes if (s.worker, s.pid) in members]
        if named:
            return named[0]
    placed = [s for s in report.processes if s.category != "unknown"]
    return placed[0] if placed else (report.processes[0] if report.processes else None)


def score_heldout(root: Path) -> StacksAccuracy:
    return StacksAccuracy([score_set(d) for d in sorted(p for p in root.iterdir() if (p / "manifest.toml").is_file())])
