"""Memory report as JUnit XML: one testcase per finding (an out-of-memory listing or a fix that alone makes a
program fit is a failure)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from tpudoctor.findings import DEFAULT_GATE, Finding, Gate
from tpudoctor.reports.check_junit import add_testcase, suite_counts
from tpudoctor.reports.escape import junit_document


def render(doc: dict[str, Any], *, gate: Gate = DEFAULT_GATE) -> str:
    findings = [Finding.from_dict(f) for f in doc["findings"]]
    suites = ET.Element("testsuites", name="tpudoctor")
    suite = ET.SubElement(suites, "testsuite", name="tpudoctor memory", tests=str(len(findings)),
                          **suite_counts(findings, gate),
                          time=f"{doc['duration_s']:.3f}")
    props = ET.SubElement(suite, "properties")
    for name, value in (("inputs", "; ".join(doc["inputs"])), ("hosts", len(doc["hosts"])),
                        ("chips", len(doc["pod"]["chips"])), ("pod_verdict", doc["pod"]["verdict"])):
        if value:
            ET.SubElement(props, "property", name=name, value=str(value))
    for finding in findings:
        add_testcase(suite, finding, classname="tpudoctor.memory", gate=gate)
    return junit_document(suites)
