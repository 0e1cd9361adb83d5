"""JSON profile report: the ``ProfileReport``'s document (``tpudoctor.profile.document``), as validated
by ``tpudoctor/schema/profile_report.schema.json`` and ``profile_diagnosis.schema.json``."""

from __future__ import annotations

import json

from tpudoctor.profile.report import ProfileReport


def render(report: ProfileReport) -> str:
    return render_document(report.to_dict())


def render_document(document: dict) -> str:
    return json.dumps(document, indent=2, default=str) + "\n"
