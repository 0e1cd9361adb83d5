"""The document ``tpudoctor profile analyze`` renders: the capture summary plus analysis results.

Analyses add themselves to ``ProfileReport.analyses`` (name -> a dataclass/dict with units in
its keys); renderers in ``tpudoctor.reports.profile_*`` only format this document.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tpudoctor import __version__
from tpudoctor.profile.summary import CaptureSummary

SCHEMA_VERSION = "1.0"


@dataclasses.dataclass
class ProfileReport:
    summary: CaptureSummary
    analyses: dict[str, Any] = dataclasses.field(default_factory=dict)
    duration_s: float = 0.0  # time to load and analyse

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "profile",
            "tool": {"name": "tpudoctor", "version": __version__},
            "duration_s": round(self.duration_s, 3),
            "summary": self.summary.to_dict(),
            "analyses": {name: _plain(value) for name, value in self.analyses.items()},
        }


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value
