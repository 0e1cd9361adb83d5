"""JSON check report: ``Report.to_dict`` as validated by ``tpudoctor/schema/check_report.schema.json``."""

from __future__ import annotations

import json

from tpudoctor.findings import Report


def render(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, sort_keys=False) + "\n"
