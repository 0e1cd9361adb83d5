"""``CompareReport``: what ``tpudoctor compare`` prepares (``tpudoctor.documents.prepare``), renders and judges
its exit status on.

Its document is one of three comparisons, told apart by ``kind``: two profiles (``tpudoctor.profile.compare``),
a profile against its history (``tpudoctor.profile.history``'s gate), two goodput reports
(``tpudoctor.goodput.compare``). The report carries it unchanged (``to_dict``); its ``results`` are the gate's
outcome (FAIL on a regression), what the exit status is judged on.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tpudoctor.findings import Finding, FindingKind, Severity, Status

PROFILE_COMPARE = "tpudoctor.profile_compare"
PROFILE_HISTORY = "tpudoctor.profile_history"
GOODPUT_COMPARE = "tpudoctor.goodput_compare"
KINDS = (PROFILE_COMPARE, PROFILE_HISTORY, GOODPUT_COMPARE)

GATE_ID = "COMPARE-GATE"
GATE_TITLE = "regression vs baseline"


@dataclasses.dataclass
class CompareReport:
    document: dict[str, Any]
    """The comparison's document; its ``kind`` is one of ``KINDS``."""
    refusal: Exception | None = dataclasses.field(default=None, compare=False)
    """The gate's refusal to judge (not comparable, nothing judged): raised once the comparison is written."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"not a comparison document: kind {self.kind!r}")

    @property
    def kind(self) -> str:
        return str(self.document.get("kind"))

    def to_dict(self) -> dict[str, Any]:
        return self.document

    @property
    def regressed_by(self) -> list[str]:
        """What got worse beyond the gate (KPIs, figures); empty when nothing did or nothing was gated."""
        gate = self.document["gate"] if self.kind == PROFILE_HISTORY else self.document
        return list(gate.get("regressed_by") or [])

    @property
    def regressed(self) -> bool:
        if self.kind == PROFILE_HISTORY:
            return self.document["gate"]["verdict"] == "regression"
        return bool(self.document.get("regressed"))

    @property
    def results(self) -> list[Finding]:
        """What the exit status is judged on: the gate, FAIL on a regression, else PASS."""
        if self.regressed:
            return [Finding(id=GATE_ID, step=None, title=GATE_TITLE, status=Status.FAIL, severity=Severity.HIGH,
                            message="regressed: " + ", ".join(self.regressed_by),
                            evidence={"regressed_by": self.regressed_by}, kind=_finding_kind(self.kind))]
        return [Finding(id=GATE_ID, step=None, title=GATE_TITLE, status=Status.PASS, severity=Severity.INFO,
                        message="no regression", kind=_finding_kind(self.kind))]

    @property
    def findings(self) -> list[Finding]:
        return self.results


def _finding_kind(kind: str) -> FindingKind:
    return FindingKind.GOODPUT if kind == GOODPUT_COMPARE else FindingKind.PROFILE
