"""Diag report as JUnit XML: one testcase per finding, a failed chip a failure naming it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from tpudoctor.findings import DEFAULT_GATE, Finding, Gate
from tpudoctor.reports.check_junit import add_testcase, suite_counts
from tpudoctor.reports.escape import junit_document


def render(doc: dict[str, Any], *, gate: Gate = DEFAULT_GATE) -> str:
    findings = [Finding.from_dict(f) for f in doc["findings"]]
    suites = ET.Element("testsuites", name="tpudoctor")
    suite = ET.SubElement(suites, "testsuite", name=f"tpudoctor diag -r {doc['level']}", tests=str(len(findings)),
                          **suite_counts(findings, gate),
                          time=f"{doc['duration_s']:.3f}", hostname=str(doc["host"]))
    props = ET.SubElement(suite, "properties")
    for name, value in (("backend", doc["backend"]), ("devices", len(doc["devices"])),
                        ("faults_injected", "; ".join(doc["faults_injected"]))):
        if value:
            ET.SubElement(props, "property", name=name, value=str(value))
    for finding in findings:
        add_testcase(suite, finding, classname="tpudoctor.diag", gate=gate)
    return junit_document(suites)
