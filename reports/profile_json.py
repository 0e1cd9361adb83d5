"""JSON profile report: the ``ProfileReport``'s document (``tpudoctor.profile.document``), as validated
by ``tpudoctor/schema/profile_report.schema.json`` and ``profile_diagnosis.schema.json``."""

from __future__ import annotations

import json

from tpudoctor.profile.report import ProfileReport


def render(report: ProfileReport) -> str:
    return json.dumps(report.to_dict(), indent=2, default=str) + "\n"
