"""The goodput report as JUnit XML: the ``--min-ettr`` gate and each finding, one testcase each."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from tpudoctor.findings import THRESHOLD_GATE, Finding, Gate, Status
from tpudoctor.reports.check_junit import add_testcase, suite_counts
from tpudoctor.reports.escape import junit_document
from tpudoctor.reports.goodput_summary import headline


def render(doc: dict[str, Any], *, gate: Gate = THRESHOLD_GATE) -> str:
    """``gate``: the run's (the findings fail it only under ``--fail-on``; ``--min-ettr`` at FAIL)."""
    findings = [Finding.from_dict(f) for f in doc.get("findings") or []]
    threshold = doc.get("gate")
    below = bool(threshold) and threshold["verdict"] == "failed" and gate.fails(Status.FAIL, threshold=True)
    suites = ET.Element("testsuites", name="tpudoctor")
    suite = ET.SubElement(suites, "testsuite", name="tpudoctor goodput", tests=str(len(findings) + bool(threshold)),
                          **suite_counts(findings, gate, extra_failures=int(below),
                                         extra_skipped=int(bool(threshold) and threshold["verdict"] == "not_judged")),
                          timestamp=doc["created_at"])
    props = ET.SubElement(suite, "properties")
    for key in ("ettr", "wall_s", "productive_s", "steps", "restarts"):
        value = doc["goodput"].get(key)
        ET.SubElement(props, "property", name=key, value="" if value is None else str(value))
    if threshold:
        case = ET.SubElement(suite, "testcase", classname="tpudoctor.goodput", name=f"ETTR >= {threshold['min_ettr']}")
        if below:
            ET.SubElement(case, "failure", message=threshold["reason"], type="ettr").text = headline(doc)
        elif threshold["verdict"] == "not_judged":
            ET.SubElement(case, "skipped", message=threshold["reason"])
        else:
            ET.SubElement(case, "system-out").text = headline(doc)
    for finding in findings:
        add_testcase(suite, finding, classname="tpudoctor.goodput", gate=gate)
    return junit_document(suites)
