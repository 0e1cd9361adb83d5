"""List evidence of the root cause (an OOM report's largest allocations) is drawn as a table in text, markdown and
HTML."""

from __future__ import annotations

import dataclasses
import json

from paths import TESTS
from sample_reports import preempted_node_report

from tpudoctor.checks.logs.user_log_files import UserLogFilesDiagnosis
from tpudoctor.facts import Facts
from tpudoctor.logdiag import Diagnoser
from tpudoctor.rendering import render
from tpudoctor.schema import validate

LOG = TESTS / "data" / "logs" / "real" / "t50_flowpm_compile_oom_padding.log"


def _oom_report():
    diagnoser = Diagnoser()
    with open(LOG, encoding="utf-8") as handle:
        diagnoser.feed_lines(handle, LOG.name)
    scan = {"sources": [{"source": LOG.name}], "lines_scanned": diagnoser.lines_scanned,
            "catalog_version": diagnoser.catalog.version,
            "diagnoses": [d.to_dict() for d in diagnoser.diagnoses()]}
    result = UserLogFilesDiagnosis().evaluate(Facts({"logs.user_files": scan}))
    report = preempted_node_report()
    report.results = [dataclasses.replace(result, duration_s=0.1)]
    return report


def test_text_draws_the_root_causes_allocations_as_a_table():
    text = render(_oom_report().to_dict(), "text")
    lines = text.splitlines()
    head = lines.index("  largest_allocations") + 1
    assert lines[head].split()[:5] == ["rank", "size_bytes", "shape", "unpadded_size_bytes", "padding_bytes"]
    row = lines[head + 1]
    assert row.split()[:2] == ["1", "32.00"] and "s32[8388608,8,4]" in row and "31.00 GiB" in row and "FloorMod" in row
    assert "hbm_excess_bytes: 27638114550 (25.74 GiB)" in text


def test_markdown_and_html_draw_a_table():
    md = render(_oom_report().to_dict(), "markdown")
    assert "### largest_allocations" in md and "| rank | size_bytes | shape |" in md
    assert "| 1 | 32.00 GiB | s32[8388608,8,4]" in md
    html = render(_oom_report().to_dict(), "html")
    assert "<h3>largest_allocations</h3>" in html and "<td>32.00 GiB</td>" in html


def test_json_keeps_the_numbers():
    doc = json.loads(render(_oom_report().to_dict(), "json"))
    validate(doc, "check_report")
    first = doc["results"][0]["evidence"]["largest_allocations"][0]
    assert first["size_bytes"] == 32 * 2**30 and first["padding_bytes"] == 31 * 2**30
