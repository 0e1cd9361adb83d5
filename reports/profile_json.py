"""JSON profile report: ``ProfileReport.to_dict`` as validated by ``tpudoctor/schema/profile_report.schema.json``."""

from __future__ import annotations

import json

from tpudoctor.profile.report import ProfileReport


def render(report: ProfileReport) -> str:
    return json.dumps(report_document(report), indent=2, default=str) + "\n"


def report_document(report: ProfileReport) -> dict:
    """The capture summary with the diagnosis (verdict, findings, breakdown...) at the top level."""
    doc = report.to_dict()
    diagnosis = doc.get("analyses", {}).pop("diagnosis", None)
    if diagnosis:
        for key, value in diagnosis.items():
            if key not in ("schema_version", "kind", "tool_version"):
                doc[key] = value
    return doc
