"""The goodput report as JUnit XML: the ``--min-ettr`` gate and each finding, one testcase each."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from tpudoctor.findings import Finding, Status
from tpudoctor.reports.check_junit import add_testcase
from tpudoctor.reports.escape import junit_document
from tpudoctor.reports.goodput_summary import headline


def render(doc: dict[str, Any]) -> str:
    findings = [Finding.from_dict(f) for f in doc.get("findings") or []]
    gate = doc.get("gate")
    suites = ET.Element("testsuites", name="tpudoctor")
    failures = sum(f.status is Status.FAIL for f in findings) + (1 if gate and gate["verdict"] == "failed" else 0)
    suite = ET.SubElement(suites, "testsuite", name="tpudoctor goodput", tests=str(len(findings) + bool(gate)),
                          failures=str(failures), errors=str(sum(f.status is Status.ERROR for f in findings)),
                          skipped=str(sum(f.status is Status.SKIP for f in findings)
                                      + (1 if gate and gate["verdict"] == "not_judged" else 0)),
                          timestamp=doc["created_at"])
    props = ET.SubElement(suite, "properties")
    for key in ("ettr", "wall_s", "productive_s", "steps", "restarts"):
        value = doc["goodput"].get(key)
        ET.SubElement(props, "property", name=key, value="" if value is None else str(value))
    if gate:
        case = ET.SubElement(suite, "testcase", classname="tpudoctor.goodput", name=f"ETTR >= {gate['min_ettr']}")
        if gate["verdict"] == "failed":
            ET.SubElement(case, "failure", message=gate["reason"], type="ettr").text = headline(doc)
        elif gate["verdict"] == "not_judged":
            ET.SubElement(case, "skipped", message=gate["reason"])
        else:
            ET.SubElement(case, "system-out").text = headline(doc)
    for finding in findings:
        add_testcase(suite, finding, classname="tpudoctor.goodput")
    return junit_document(suites)
