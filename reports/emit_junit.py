"""A view as JUnit XML: one testcase per finding. The run's ``Gate`` (``tpudoctor.findings``) decides both the exit
status and which testcases are a ``<failure>`` (an ``<error>`` for ERROR), so ``failures`` + ``errors`` is 0
exactly when the run exits 0 on its findings; the suite's properties are the view's headline facts."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from tpudoctor.findings import DEFAULT_GATE, Finding, Gate
from tpudoctor.reports.check_junit import add_testcase, suite_counts
from tpudoctor.reports.escape import junit_document, lines, plain
from tpudoctor.reports.view import Suite, View, classname


def emit(view: View, *, gate: Gate = DEFAULT_GATE) -> str:
    suites = ET.Element("testsuites", name="tpudoctor")
    _suite(suites, view.suite, view.findings, gate)
    for suite_facts, findings in view.details:
        _suite(suites, suite_facts, findings, None)
    return junit_document(suites)


def _suite(suites: ET.Element, suite_facts: Suite, findings: Sequence[Finding], gate: Gate | None) -> None:
    """``gate=None``: a suite of detail, none of whose testcases fails (another suite counts them)."""
    attributes = {"name": suite_facts.name, "tests": str(len(findings)), **suite_counts(findings, gate)}
    if suite_facts.duration_s is not None:
        attributes["time"] = f"{suite_facts.duration_s:.3f}"
    if suite_facts.timestamp:
        attributes["timestamp"] = suite_facts.timestamp
    if suite_facts.hostname:
        attributes["hostname"] = suite_facts.hostname
    suite = ET.SubElement(suites, "testsuite", attributes)
    if suite_facts.properties:
        props = ET.SubElement(suite, "properties")
        for name, value in suite_facts.properties:
            ET.SubElement(props, "property", name=name, value=plain(value))  # one line: no forged row
    for finding in findings:
        add_testcase(suite, finding, classname=classname(suite_facts, finding), gate=gate)
    if suite_facts.summary:
        ET.SubElement(suite, "system-out").text = lines(suite_facts.summary)
