"""Bench result as JUnit XML: one testcase per bench finding (BENCH-001 gate, BENCH-002 training).

The testcases have the shape of ``tpudoctor check``'s, so a CI reporter shows both alike.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from tpudoctor.findings import DEFAULT_GATE, Finding, Gate, Status
from tpudoctor.reports.bench_summary import headline, mismatch_lines
from tpudoctor.reports.check_junit import add_testcase, suite_counts
from tpudoctor.reports.escape import junit_document, plain


def render(document: Mapping[str, Any], *, gate: Gate = DEFAULT_GATE) -> str:
    key = document["key"]
    m = document["measurement"]
    findings = [Finding.from_dict(f) for f in document["findings"]]
    seconds = m["compile_time_ms"] / 1000.0 + m["windows"] * m["steps_per_window"] * m["step_time_ms_median"] / 1000.0
    suites = ET.Element("testsuites", name="tpudoctor")
    suite = ET.SubElement(
        suites, "testsuite", name="tpudoctor bench", tests=str(len(findings)),
        **suite_counts(findings, gate),
        time=f"{seconds:.3f}", timestamp=document["created_at"], hostname=document["host"],
    )
    props = ET.SubElement(suite, "properties")
    for name, value in key.items():
        ET.SubElement(props, "property", name=name, value="" if value is None else str(value))
    classname = f"tpudoctor.bench.{key['model']}"
    for finding in findings:
        case = add_testcase(suite, finding, classname=classname, gate=gate)
        if finding.status is not Status.SKIP:  # the run itself, for the reader of the CI page
            context = "\n".join(plain(line) for line in [headline(document), *mismatch_lines(document)])
            out = case.find("system-out")
            if out is None:
                ET.SubElement(case, "system-out").text = context
            else:
                out.text = f"{out.text}\n{context}"
    return junit_document(suites)
