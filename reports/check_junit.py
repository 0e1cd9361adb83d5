"""JUnit XML: one testcase per check, so Jenkins, GitLab and GitHub reporters show each one."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from tpudoctor.findings import Finding, Report, Status
from tpudoctor.reports.escape import junit_document, lines, plain
from tpudoctor.reports.markers import scope_words, summary_sentence
from tpudoctor.reports.sections import Section


def render(report: Report, *, sections: Sequence[Section] = ()) -> str:
    suites = ET.Element("testsuites", name="tpudoctor")
    suite, cases = testsuite(report)
    suites.append(suite)
    for section in sections:
        section.junit(suites, suite, cases)
    return junit_document(suites)


def testsuite(report: Report, name: str = "tpudoctor check") -> tuple[ET.Element, list[tuple[ET.Element, Finding]]]:
    """The report as one testsuite, and its testcases with the finding each one tells."""
    counts = report.summary.counts
    suite = ET.Element(
        "testsuite",
        name=name,
        tests=str(len(report.results)),
        failures=str(counts["FAIL"]),
        errors=str(counts["ERROR"]),
        skipped=str(counts["SKIP"]),
        time=f"{report.duration_s:.3f}",
        timestamp=report.started_at.isoformat(),
        hostname=report.host,
    )
    props = ET.SubElement(suite, "properties")
    for key, value in report.target.to_dict().items():
        if value:
            ET.SubElement(props, "property", name=key, value=str(value))
    cases = [(add_testcase(suite, r, classname=f"tpudoctor.step{int(r.step)}_{r.step.name.lower()}"), r)
             for r in report.ordered_results()]
    ET.SubElement(suite, "system-out").text = plain(summary_sentence(report))
    return suite, cases


def add_testcase(suite: ET.Element, r: Finding, *, classname: str) -> ET.Element:
    """One finding as a testcase: FAIL a failure, ERROR an error, SKIP skipped, WARN printed."""
    where = scope_words(r.scope)
    case = ET.SubElement(suite, "testcase", classname=classname,
                         name=f"{r.id} {r.title}" + (f" ({where})" if where else ""), time=f"{r.duration_s:.3f}")
    if where:  # also machine-readable, as testcase properties (what pytest's record_property writes)
        props = ET.SubElement(case, "properties")
        for field, values in r.scope.to_dict().items():
            if values:
                ET.SubElement(props, "property", name=f"scope.{field}", value=",".join(values))
    body = _body(r)
    if r.status is Status.FAIL:
        ET.SubElement(case, "failure", message=r.message, type=r.severity.value).text = body
    elif r.status is Status.ERROR:
        ET.SubElement(case, "error", message=r.message, type="check-error").text = body
    elif r.status is Status.SKIP:
        ET.SubElement(case, "skipped", message=r.skip_reason or r.message)
    elif r.status is Status.WARN:
        ET.SubElement(case, "system-out").text = f"WARNING: {plain(r.message)}\n{body}"
    return case


def _body(r: Finding) -> str:
    """One line per item (a field's own newline never starts a line of its own); a traceback keeps its lines."""
    body = [plain(r.message)]
    body += [plain(f"{key}: {value}") for key, value in r.evidence.items() if key != "traceback"]
    if "traceback" in r.evidence:
        body.append(lines(r.evidence["traceback"]))
    if r.remediation:
        if r.remediation.text:
            body.append(plain(f"fix: {r.remediation.text}"))
        body += [plain(f"$ {c}") for c in r.remediation.commands]
    return "\n".join(body)
