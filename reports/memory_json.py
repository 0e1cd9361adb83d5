"""JSON memory report: the prepared document (``tpudoctor/schema/memory_report.schema.json``)."""

from __future__ import annotations

import json


def render(document: dict) -> str:
    return json.dumps(document, indent=2, default=str) + "\n"
