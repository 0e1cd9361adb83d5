"""A view as JUnit XML: one testcase per finding, so Jenkins, GitLab and GitHub reporters show each one.

The run's ``Gate`` (``tpudoctor.findings``), the rule that sets the exit status, decides which testcases are a
``<failure>`` (an ``<error>`` when the check itself could not run, ERROR): a finding that does not fail the run
(a WARN below ``--fail-on warn``, anything under ``--exit-zero``) is a passing testcase whose ``<system-out>``
says its status and message; SKIP is ``<skipped>``. A threshold the user set (``View.thresholds``: goodput's
``--min-ettr``) is judged at FAIL whatever ``--fail-on`` says. So ``failures`` + ``errors`` is 0 exactly when
the run exits 0 on its findings; the suite's properties are the view's headline facts."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from tpudoctor.findings import DEFAULT_GATE, Finding, Gate, Status
from tpudoctor.reports.escape import junit_document, lines, plain
from tpudoctor.reports.view import Suite, View, classname, evidence_lines, fix_lines, scope_words

Judged = tuple[Finding, bool]
"""A finding and whether it fails the run."""


def emit(view: View, *, gate: Gate = DEFAULT_GATE) -> str:
    suites = ET.Element("testsuites", name="tpudoctor")
    thresholds = len(view.thresholds)
    for facts, cases, detail in ((view.suite, (*view.thresholds, *view.findings), False),
                                 *((facts, cases, True) for facts, cases in view.details)):
        _suite(suites, facts, [(f, not detail and gate.fails(f.status, threshold=i < thresholds))
                               for i, f in enumerate(cases)], detail=detail)
        thresholds = 0  # the thresholds are the main suite's first testcases only
    return junit_document(suites)


def _suite(suites: ET.Element, facts: Suite, judged: Sequence[Judged], *, detail: bool = False) -> None:
    """``detail``: a suite none of whose testcases fails (a merged report's worker: the merged suite counts them)."""
    attributes = {"name": facts.name, "tests": str(len(judged)),
                  "failures": str(sum(fails and f.status is not Status.ERROR for f, fails in judged)),
                  "errors": str(sum(fails and f.status is Status.ERROR for f, fails in judged)),
                  "skipped": str(sum(f.status is Status.SKIP for f, _ in judged))}
    if facts.duration_s is not None:
        attributes["time"] = f"{facts.duration_s:.3f}"
    attributes.update((k, v) for k, v in (("timestamp", facts.timestamp), ("hostname", facts.hostname)) if v)
    suite = ET.SubElement(suites, "testsuite", attributes)
    if facts.properties:
        props = ET.SubElement(suite, "properties")
        for name, value in facts.properties:
            ET.SubElement(props, "property", name=name, value=plain(value))  # one line: no forged row
    for finding, fails in judged:
        _testcase(suite, finding, classname(facts, finding), fails, detail)
    if facts.summary:
        ET.SubElement(suite, "system-out").text = lines(facts.summary)


def _testcase(suite: ET.Element, r: Finding, classname: str, fails: bool, detail: bool) -> None:
    where = scope_words(r.scope)
    case = ET.SubElement(suite, "testcase", classname=classname,
                         name=f"{r.id} {r.title}" + (f" ({where})" if where else ""), time=f"{r.duration_s:.3f}")
    if where:  # also machine-readable, as testcase properties (what pytest's record_property writes)
        props = ET.SubElement(case, "properties")
        for field, values in r.scope.to_dict().items():
            if values:
                ET.SubElement(props, "property", name=f"scope.{field}", value=",".join(values))
    body = _body(r)
    if fails and r.status is Status.ERROR:
        ET.SubElement(case, "error", message=r.message, type="check-error").text = body
    elif fails:
        ET.SubElement(case, "failure", message=r.message, type=r.severity.value).text = body
    elif r.status is Status.SKIP:
        ET.SubElement(case, "skipped", message=r.skip_reason or r.message)
    elif r.status is Status.WARN:
        ET.SubElement(case, "system-out").text = f"WARNING: {plain(r.message)}\n{body}"
    elif r.status is not Status.PASS:  # said, not failed
        why = "detail: the merged suite counts it" if detail else "not a failure of this run: below --fail-on, or --exit-zero"
        ET.SubElement(case, "system-out").text = f"{r.status.value} ({why}): {body}"


def _body(r: Finding) -> str:
    """One line per item (a field's own newline never starts a line of its own); a traceback keeps its lines."""
    body = [plain(r.message)]  # evidence_lines gives one line per evidence key, in order: zip pairs them
    body += [plain(line) for key, line in zip(r.evidence, evidence_lines(r), strict=True) if key != "traceback"]
    if "traceback" in r.evidence:
        body.append(lines(r.evidence["traceback"]))
    if r.remediation:
        body += [plain(f"fix: {line}") for line in fix_lines(r)]  # one line per way to fix it
        body += [plain(f"$ {c}") for c in r.remediation.commands]
    return "\n".join(body)
