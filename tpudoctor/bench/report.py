"""``BenchReport``: what ``tpudoctor bench`` prepares (``tpudoctor.documents.prepare``), renders and judges its
exit status on.

The document (``tpudoctor.bench.document``: ``kind: bench``, also the baseline file's shape) is carried
unchanged (``to_dict``); its ``findings`` (``BENCH-001`` the gate, ``BENCH-002`` the loss) are the results the
exit status is judged on: a regression or a model that does not learn is a FAIL, so exit 1.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from tpudoctor.bench.document import DOCUMENT_KIND
from tpudoctor.findings import Finding


@dataclasses.dataclass
class BenchReport:
    document: dict[str, Any]
    """The bench document (schema ``bench_result``), its ``findings`` set (``bench.document.with_findings``)."""
    baseline_document: dict[str, Any] | None = None
    """What ``--save-baseline`` writes (``bench.document.as_baseline``); None when the run is no baseline."""
    baseline_path: str | None = None
    """Where ``--save-baseline`` writes it."""
    note: str | None = None
    """A line for stderr: why the throughput is not meaningful (the loss did not drop)."""

    kind: ClassVar[str] = DOCUMENT_KIND

    def to_dict(self) -> dict[str, Any]:
        return self.document

    @property
    def also_write(self) -> list[tuple[str, BenchReport]]:
        """``--save-baseline FILE`` and the baseline written there, when this run is one."""
        path, baseline = self.baseline_path, self.baseline_document
        return [(path, BenchReport(baseline))] if path and baseline is not None else []

    @property
    def findings(self) -> list[Finding]:
        return [Finding.from_dict(f) for f in self.document.get("findings") or []]

    @property
    def results(self) -> list[Finding]:
        """What the exit status is judged on: every bench finding."""
        return self.findings
