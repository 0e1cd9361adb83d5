"""JSON check report: ``Report.to_dict`` as validated by ``tpudoctor/schema/check_report.schema.json``."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tpudoctor.findings import Report
from tpudoctor.reports.sections import Section


def render(report: Report, *, sections: Sequence[Section] = ()) -> str:
    document = report.to_dict()
    for section in sections:
        document.update(section.json())
    return json.dumps(document, indent=2, sort_keys=False) + "\n"
