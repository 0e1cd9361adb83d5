"""JSON hang report: ``HangReport.to_dict`` as validated by ``tpudoctor/schema/hang_report.schema.json``."""

from __future__ import annotations

import json

from tpudoctor.hang.report import HangReport


def render(report: HangReport) -> str:
    return render_document(report.to_dict())


def render_document(document: dict) -> str:
    return json.dumps(document, indent=2, sort_keys=False, default=str) + "\n"
