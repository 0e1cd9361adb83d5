"""JUnit XML: one testcase per check, so Jenkins, GitLab and GitHub reporters show each one.

Every command's JUnit follows the run's ``Gate`` (``tpudoctor.findings``), the rule that sets its exit status:
a finding that fails the run is a ``<failure>`` (an ``<error>`` when the check itself could not run, ERROR);
one that does not (a WARN below ``--fail-on warn``, anything under ``--exit-zero``) is a passing testcase whose
``<system-out>`` says its status and message; SKIP is ``<skipped>``. So ``failures`` + ``errors`` is 0 exactly
when the run exits 0 on its findings.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence

from tpudoctor.findings import DEFAULT_GATE, Finding, Gate, Report, Status
from tpudoctor.reports.escape import junit_document, lines, plain
from tpudoctor.reports.markers import scope_words, summary_sentence
from tpudoctor.reports.sections import Section


def render(report: Report, *, sections: Sequence[Section] = (), gate: Gate = DEFAULT_GATE) -> str:
    suites = ET.Element("testsuites", name="tpudoctor")
    suite, cases = testsuite(report, gate=gate)
    suites.append(suite)
    for section in sections:
        section.junit(suites, suite, cases)
    return junit_document(suites)


def testsuite(report: Report, name: str = "tpudoctor check", *, gate: Gate | None = DEFAULT_GATE
              ) -> tuple[ET.Element, list[tuple[ET.Element, Finding]]]:
    """The report as one testsuite, and its testcases with the finding each one tells; ``gate=None``: a
    detail suite (a merged report's worker), none of whose testcases fails (the merged suite holds them)."""
    suite = ET.Element(
        "testsuite",
        name=name,
        tests=str(len(report.results)),
        **suite_counts(report.results, gate),
        time=f"{report.duration_s:.3f}",
        timestamp=report.started_at.isoformat(),
        hostname=report.host,
    )
    props = ET.SubElement(suite, "properties")
    for key, value in report.target.to_dict().items():
        if value:
            ET.SubElement(props, "property", name=key, value=str(value))
    cases = [(add_testcase(suite, r, classname=f"tpudoctor.step{int(r.step)}_{r.step.name.lower()}", gate=gate), r)
             for r in report.ordered_results()]
    ET.SubElement(suite, "system-out").text = plain(summary_sentence(report))
    return suite, cases


def suite_counts(findings: Iterable[Finding], gate: Gate | None, *, extra_failures: int = 0,
                 extra_skipped: int = 0) -> dict[str, str]:
    """A testsuite's ``failures``, ``errors`` and ``skipped``, counted by the rule ``add_testcase`` follows
    (``extra_*``: testcases a renderer adds besides the findings, such as goodput's ``--min-ettr``)."""
    findings = list(findings)
    failing = [f for f in findings if gate is not None and gate.fails(f.status)]
    return {"failures": str(sum(f.status is not Status.ERROR for f in failing) + extra_failures),
            "errors": str(sum(f.status is Status.ERROR for f in failing)),
            "skipped": str(sum(f.status is Status.SKIP for f in findings) + extra_skipped)}


def add_testcase(suite: ET.Element, r: Finding, *, classname: str, gate: Gate | None = DEFAULT_GATE) -> ET.Element:
    """One finding as a testcase: a ``<failure>`` when it fails the run under ``gate`` (an ``<error>`` for
    ERROR), SKIP skipped, any other status printed in ``<system-out>``; ``gate=None``: detail, never a failure."""
    where = scope_words(r.scope)
    case = ET.SubElement(suite, "testcase", classname=classname,
                         name=f"{r.id} {r.title}" + (f" ({where})" if where else ""), time=f"{r.duration_s:.3f}")
    if where:  # also machine-readable, as testcase properties (what pytest's record_property writes)
        props = ET.SubElement(case, "properties")
        for field, values in r.scope.to_dict().items():
            if values:
                ET.SubElement(props, "property", name=f"scope.{field}", value=",".join(values))
    body = _body(r)
    if gate is not None and gate.fails(r.status) and r.status is Status.ERROR:
        ET.SubElement(case, "error", message=r.message, type="check-error").text = body
    elif gate is not None and gate.fails(r.status):
        ET.SubElement(case, "failure", message=r.message, type=r.severity.value).text = body
    elif r.status is Status.SKIP:
        ET.SubElement(case, "skipped", message=r.skip_reason or r.message)
    elif r.status is Status.WARN:
        ET.SubElement(case, "system-out").text = f"WARNING: {plain(r.message)}\n{body}"
    elif r.status is not Status.PASS:  # said, not failed
        why = ("detail: the merged suite counts it" if gate is None
               else "not a failure of this run: below --fail-on, or --exit-zero")
        ET.SubElement(case, "system-out").text = f"{r.status.value} ({why}): {body}"
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
