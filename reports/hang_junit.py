"""Hang report as JUnit XML: one testcase per finding (HANG-001 the job moves, ...), the check report's
testcase shape, so a CI view lists a hung job as a failure with its root cause and decision."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from tpudoctor.findings import DEFAULT_GATE, Gate
from tpudoctor.hang.report import HangReport
from tpudoctor.reports.check_junit import add_testcase, suite_counts
from tpudoctor.reports.escape import junit_document


def render(report: HangReport, *, gate: Gate = DEFAULT_GATE) -> str:
    findings = report.findings
    suites = ET.Element("testsuites", name="tpudoctor")
    suite = ET.SubElement(
        suites, "testsuite", name="tpudoctor hang", tests=str(len(findings)),
        **suite_counts(findings, gate),
        time=f"{report.duration_s:.3f}", timestamp=report.started_at.isoformat(), hostname=report.host,
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (("verdict", report.verdict), ("confidence", report.confidence),
                        ("decision", report.decision.action if report.decision else ""),
                        *report.target.to_dict().items()):
        if value:
            ET.SubElement(props, "property", name=name, value=str(value))
    for finding in findings:
        add_testcase(suite, finding, classname="tpudoctor.hang", gate=gate)
    return junit_document(suites)
