"""``GoodputReport``: what ``tpudoctor goodput`` prepares (``tpudoctor.documents.prepare``), renders and judges
its exit status on.

The document is built as plain data by ``tpudoctor.goodput.analyze`` (``kind: goodput``); the report carries it
unchanged (``to_dict``), so the JSON stays byte for byte what the analysis made.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from tpudoctor.errors import UsageError
from tpudoctor.findings import Finding, FindingKind, Severity, Status
from tpudoctor.goodput.analyze import DOCUMENT_KIND

GATE_ID = "GOODPUT-GATE"
GATE_TITLE = "ETTR vs --min-ettr"
_GATE_STATUS = {"passed": Status.PASS, "failed": Status.FAIL, "not_judged": Status.SKIP}


@dataclasses.dataclass
class GoodputReport:
    document: dict[str, Any]
    """The goodput document (schema ``goodput_report``)."""

    kind: ClassVar[str] = DOCUMENT_KIND

    def to_dict(self) -> dict[str, Any]:
        return self.document

    @property
    def gate(self) -> dict[str, Any] | None:
        """``--min-ettr``'s verdict (passed, failed, not_judged and why); None without ``--min-ettr``."""
        return self.document.get("gate")

    @property
    def refusal(self) -> UsageError | None:
        """``--min-ettr`` asked what the log cannot answer (no ETTR, or times that contradict each other): not a
        finding but a usage error (exit 2), raised once the report is written."""
        gate = self.gate
        return UsageError(f"--min-ettr cannot be judged: {gate['reason']}") if gate and gate["verdict"] == \
            "not_judged" else None

    @property
    def findings(self) -> list[Finding]:
        """The goodput rules' findings (what the report says about the buckets; they set the exit status only
        under ``--fail-on``)."""
        return [Finding.from_dict(f) for f in self.document.get("findings") or []]

    @property
    def results(self) -> list[Finding]:
        """The ``--min-ettr`` gate's outcome (``threshold_results``)."""
        return self.threshold_results

    @property
    def threshold_results(self) -> list[Finding]:
        """The ``--min-ettr`` gate's outcome, judged apart from the findings (FAIL below it; SKIP when the log
        gives no ETTR, which the command reports as a usage error); none without a gate. The findings fail
        the run only under ``--fail-on`` (``tpudoctor.findings.Gate``)."""
        gate = self.gate
        if not gate:
            return []
        status = _GATE_STATUS[gate["verdict"]]
        return [Finding(id=GATE_ID, step=None, title=GATE_TITLE, status=status, message=gate["reason"],
                        severity=Severity.HIGH if status is Status.FAIL else Severity.INFO,
                        evidence={"min_ettr": gate["min_ettr"], "ettr": gate["ettr"]},
                        skip_reason=gate["reason"] if status is Status.SKIP else None, kind=FindingKind.GOODPUT)]
