"""Golden files for the check report's view in each format. Regenerate with UPDATE_GOLDEN=1 after a deliberate change."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest
from paths import TESTS
from sample_reports import healthy_report, preempted_node_report, scoped_report

from tpudoctor.rendering import render
from tpudoctor.schema import validate

GOLDEN = TESTS / "golden"


def render_check_report(report, fmt: str, **options) -> str:
    return render(report.to_dict(), fmt, **options)


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path}; run with UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt,ext", [("text", "txt"), ("markdown", "md"), ("junit", "xml")])
def test_check_report_matches_golden(fmt, ext):
    _golden(f"check_preempted.{ext}", render_check_report(preempted_node_report(), fmt))


def test_text_puts_root_cause_first_with_fix_commands_apart():
    text = render_check_report(preempted_node_report(), "text")
    lines = text.splitlines()
    cause_at = next(i for i, line in enumerate(lines) if line.startswith("Root cause"))
    first_step_at = next(i for i, line in enumerate(lines) if line.startswith("1. "))
    assert cause_at < first_step_at
    assert "[✗] NODE-001" in lines[cause_at + 1]
    assert any(line.strip().startswith("$ gcloud compute tpus tpu-vm delete my-tpu") for line in lines)
    assert "[-] NODE-002" in text and "blocked by NODE-001 (FAIL)" in text
    assert "[!] GCS-003" in text and "[☠] LOGS-001" in text
    assert lines[-1].startswith("tpudoctor found 3 issue(s)")


def test_verbose_text_shows_evidence_of_passing_checks():
    quiet = render_check_report(healthy_report(), "text")
    verbose = render_check_report(healthy_report(), "text", verbose=True)
    assert "python_version" not in quiet and "python_version: 3.11.7" in verbose
    assert "No issues found" in quiet


def test_junit_has_one_testcase_per_check_with_the_right_outcome():
    root = ET.fromstring(render_check_report(preempted_node_report(), "junit").split("\n", 1)[1])
    suite = root.find("testsuite")
    cases = {c.get("name").split()[0]: c for c in suite.findall("testcase")}
    assert set(cases) == {"NODE-001", "NODE-002", "GCS-003", "RUNTIME-001", "LOGS-001"}
    assert cases["NODE-001"].find("failure") is not None
    assert cases["LOGS-001"].find("error") is not None
    assert cases["NODE-002"].find("skipped").get("message") == "blocked by NODE-001 (FAIL)"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("5", "1", "1", "1")


def test_json_and_html_render_the_same_report():
    doc = json.loads(render_check_report(preempted_node_report(), "json"))
    validate(doc, "check_report")
    assert doc["summary"]["root_cause"] == "NODE-001"
    html = render_check_report(preempted_node_report(), "html")
    assert html.startswith("<!doctype html>") and "Root cause (step 1, Node state and resources): NODE-001" in html
    assert "<script src" not in html and "http://" not in html.replace("https://cloud.google.com", "")


def test_byte_counts_in_evidence_are_also_shown_for_people():
    report = preempted_node_report()
    report.results[0].evidence["hbm_used_bytes"] = 22054657065
    text = render_check_report(report, "text")
    assert "hbm_used_bytes: 22054657065 (20.54 GiB)" in text
    assert json.loads(render_check_report(report, "json"))["results"][0]["evidence"]["hbm_used_bytes"] == 22054657065


@pytest.mark.parametrize("fmt,ext", [("text", "txt"), ("markdown", "md"), ("junit", "xml"), ("html", "html")])
def test_scoped_check_report_matches_golden(fmt, ext):
    _golden(f"check_scoped.{ext}", render_check_report(scoped_report(), fmt))


def test_every_single_report_format_shows_where_a_finding_holds():
    report = scoped_report()
    text = render_check_report(report, "text")
    assert "NODE-009 Every worker of a multi-host node is reachable (on workers 3, 7):" in text
    assert "(on worker 0; host t1v-n-0)" in text
    assert "RUNTIME-001 Python version is supported by TPU frameworks: Python" in text  # whole node: no scope
    for fmt in ("markdown", "html"):
        out = render_check_report(report, fmt)
        assert "NODE-009 Every worker of a multi-host node is reachable (on workers 3, 7):" in out, fmt
        assert "RUNTIME-001 Python version is supported by TPU frameworks: Python" in out, fmt
    root = ET.fromstring(render_check_report(report, "junit").split("\n", 1)[1])
    case = next(c for c in root.iter("testcase") if c.get("name").startswith("NODE-009"))
    assert case.get("name").endswith("(on workers 3, 7)")
    assert {p.get("name"): p.get("value") for p in case.iter("property")} == {"scope.workers": "3,7"}


def test_profile_report_as_junit_has_a_testcase_per_finding_failing_on_fail():
    """``profile analyze --format junit``: the profile kind through the one junit emitter. The slow-host capture's
    report (three FAILs on worker2, two WARNs): five testcases, the FAILs failures, the WARNs passing testcases that
    say so, each naming its host, and the verdict and step time as suite properties."""
    snapshot = TESTS / "snapshots" / "profile" / "multihost_input_stall.json"
    document = json.loads(snapshot.read_text(encoding="utf-8").replace("<normalised>", "0"))
    root = ET.fromstring(render(document, "junit").split("\n", 1)[1])
    suite = root.find("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors")) == (
        "tpudoctor profile analyze", "5", "3", "0")
    cases = {case.get("name").split()[0]: case for case in suite.iter("testcase")}
    assert set(cases) == {"host-overhead", "straggler", "straggler-cost", "collectives", "step-time-variance"}
    assert cases["straggler"].find("failure") is not None and cases["straggler"].get("name").endswith("(on host worker2)")
    warned = cases["collectives"]
    assert warned.find("failure") is None and warned.find("system-out").text.startswith("WARNING: ")
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties["verdict"] == document["verdict"] and properties["source"].endswith("multihost_input_stall")
