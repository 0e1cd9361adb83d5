"""Diag report as JUnit XML: one testcase per finding, a failed chip a failure naming it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from tpudoctor.findings import Finding, Status
from tpudoctor.reports.check_junit import add_testcase
from tpudoctor.reports.escape import junit_document


def render(doc: dict[str, Any]) -> str:
    findings = [Finding.from_dict(f) for f in doc["findings"]]
    suites = ET.Element("testsuites", name="tpudoctor")
    suite = ET.SubElement(suites, "testsuite", name=f"tpudoctor diag -r {doc['level']}", tests=str(len(findings)),
                          failures=str(sum(f.status is Status.FAIL for f in findings)),
                          errors=str(sum(f.status is Status.ERROR for f in findings)),
                          skipped=str(sum(f.status is Status.SKIP for f in findings)),
                          time=f"{doc['duration_s']:.3f}", hostname=str(doc["host"]))
    props = ET.SubElement(suite, "properties")
    for name, value in (("backend", doc["backend"]), ("devices", len(doc["devices"])),
                        ("faults_injected", "; ".join(doc["faults_injected"]))):
        if value:
            ET.SubElement(props, "property", name=name, value=str(value))
    for finding in findings:
        add_testcase(suite, finding, classname="tpudoctor.diag")
    return junit_document(suites)
