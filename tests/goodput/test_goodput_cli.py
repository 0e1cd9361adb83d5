"""``tpudoctor goodput`` end to end: formats, the --min-ettr gate, bad input, compare, rules and their registry."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from paths import TESTS

from tpudoctor.cli import main
from tpudoctor.families import FAMILIES
from tpudoctor.families import load_rules as load_family
from tpudoctor.findings import Status
from tpudoctor.rule import evaluate_rule
from tpudoctor.schema import validate

FIXTURE = TESTS / "fixtures" / "goodput" / "maxtext_restart.log"


def json_report(tmp_path: Path, *args: str, name: str = "g.json") -> dict:
    out = tmp_path / name
    assert main(["goodput", *args, "--format", "json", "-o", str(out)]) == 0
    return json.loads(out.read_text())


def test_json_report_has_the_goodput_section_and_validates(tmp_path):
    doc = json_report(tmp_path, str(FIXTURE))
    validate(doc, "goodput_report")
    assert doc["kind"] == "goodput" and doc["schema_version"].startswith("1.")
    g = doc["goodput"]
    for key in ("steps", "first_step", "last_step", "median_step_s", "restarts", "repeated_steps",
                "checkpoint_saves", "wall_s", "ettr"):
        assert key in g
    assert set(g["badput"]) == {"TPU_INITIALIZATION", "TRAINING_PREP", "PROGRAM_STARTUP", "DATA_LOADING_SYNC",
                                "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME", "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME",
                                "WASTED_PROGRESS_FROM_DISRUPTION", "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION", "OTHER"}
    assert all({"seconds", "percent"} <= set(v) for v in g["badput"].values())


def test_text_markdown_html_junit(tmp_path, capsys):
    assert main(["goodput", str(FIXTURE)]) == 0
    text = capsys.readouterr().out
    assert "ETTR 0.271" in text and "Where did the time go" in text
    assert "[✗] compilation Compilation takes 22.9%" in text and "jax_compilation_cache_dir" in text
    assert main(["goodput", str(FIXTURE), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| PROGRAM_STARTUP | compilation / first step | 3.7 min | 22.92 |  |" in md
    html_path = tmp_path / "g.html"
    assert main(["goodput", str(FIXTURE), "--format", "html", "-o", str(html_path)]) == 0
    page = html_path.read_text()
    assert page.count('class="band"') >= 12 and "<svg" in page and "http" not in page.split("<body>")[0]
    assert main(["goodput", str(FIXTURE), "--format", "junit", "--min-ettr", "0.2"]) == 0
    suite = ET.fromstring(capsys.readouterr().out).find("testsuite")
    assert suite.get("failures") == "0"  # exit 0: compilation and restarts FAIL, said in system-out; the gate passes
    assert sum("FAIL (" in (c.findtext("system-out") or "") for c in suite.iter("testcase")) == 2
    (gate,) = [c for c in suite.iter("testcase") if c.get("name") == "GOODPUT-GATE ETTR vs --min-ettr"]
    assert gate.find("failure") is None and suite.find("testcase") is gate  # the threshold first
    assert main(["goodput", str(FIXTURE), "--format", "junit", "--min-ettr", "0.2", "--fail-on", "fail"]) == 1
    assert ET.fromstring(capsys.readouterr().out).find("testsuite").get("failures") == "2"  # now they set exit 1
    assert main(["goodput", str(FIXTURE), "--format", "junit", "--min-ettr", "0.5"]) == 1  # below it, whatever --fail-on
    suite = ET.fromstring(capsys.readouterr().out).find("testsuite")
    assert suite.get("failures") == "1" and suite.find("testcase").find("failure").get("message") == "ETTR 0.271 < 0.500"


def test_min_ettr_gate_exits_1_below_and_0_above(tmp_path, capsys):
    assert main(["goodput", str(FIXTURE), "--min-ettr", "0.9"]) == 1
    assert "--min-ettr 0.9: FAILED (ETTR 0.271 < 0.900)" in capsys.readouterr().out
    assert main(["goodput", str(FIXTURE), "--min-ettr", "0.25"]) == 0


def test_min_ettr_cannot_judge_a_log_without_timestamps(tmp_path, capsys):
    log = tmp_path / "plain.log"
    log.write_text("completed step: 1, seconds: 5.000, loss: 2\ncompleted step: 2, seconds: 5.000, loss: 2\n")
    assert main(["goodput", str(log), "--min-ettr", "0.9"]) == 2
    assert "cannot be judged" in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    (b"", "is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not a text log"),
])
def test_empty_and_binary_logs_are_a_clear_input_error(tmp_path, capsys, content, message):
    log = tmp_path / "x.log"
    log.write_bytes(content)
    assert main(["goodput", str(log)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_missing_file_and_no_input_are_usage_errors(tmp_path, capsys):
    assert main(["goodput", str(tmp_path / "nope.log")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["goodput"]) == 2
    assert "say which logs to read" in capsys.readouterr().err
    assert main(["goodput", str(FIXTURE), "--step-pattern", "("]) == 2
    assert main(["goodput", str(FIXTURE), "--min-ettr", "90"]) == 2


def test_non_utf8_bytes_are_read_and_counted(tmp_path):
    log = tmp_path / "latin1.log"
    log.write_bytes(FIXTURE.read_bytes().replace(b"Num_devices", b"Num_devices \xe9t\xe9", 1))
    doc = json_report(tmp_path, str(log))
    assert doc["sources"][0]["non_utf8_lines"] == 1
    assert doc["goodput"]["ettr"] == 0.2708


def test_gzip_and_stdin(tmp_path):
    gz = tmp_path / "train.log.gz"
    gz.write_bytes(gzip.compress(FIXTURE.read_bytes()))
    assert json_report(tmp_path, str(gz))["goodput"]["ettr"] == 0.2708
    proc = subprocess.run([sys.executable, "-m", "tpudoctor", "goodput", "-", "--format", "json"],
                          input=FIXTURE.read_bytes(), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["sources"][0]["source"] == "<stdin>" and doc["goodput"]["wall_s"] == 960.0


def test_a_log_with_no_known_lines_says_so(tmp_path):
    log = tmp_path / "noise.log"
    log.write_text("hello\nworld\n")
    doc = json_report(tmp_path, str(log))
    assert doc["goodput"]["steps"] is None and "no step" in doc["goodput"]["nulls"]["steps"]


def test_compare_two_goodput_reports(tmp_path, capsys):
    a = tmp_path / "a.json"
    assert main(["goodput", str(FIXTURE), "--format", "json", "-o", str(a)]) == 0
    doc = json.loads(a.read_text())
    b_doc = json.loads(json.dumps(doc))
    b_doc["goodput"]["ettr"], b_doc["goodput"]["goodput_percent"] = 0.2, 20.0
    b_doc["goodput"]["badput"]["PROGRAM_STARTUP"]["percent"] = 30.0
    b = tmp_path / "b.json"
    b.write_text(json.dumps(b_doc))
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "ETTR 0.2708 -> 0.2" in out
    assert main(["compare", str(a), str(b), "--fail-on-regression", "5", "--format", "json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["regressed_by"] == ["goodput_percent", "PROGRAM_STARTUP %"]
    assert main(["compare", str(a), str(b), "--fail-on-regression", "10"]) == 0
    capsys.readouterr()
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema_version": "2.0", "kind": "check"}))
    assert main(["compare", str(a), str(other)]) == 2


@pytest.mark.parametrize("rule_id, rule", sorted(load_family("goodput-rules").items()))
def test_every_goodput_rule_gives_its_examples_statuses(rule_id, rule):
    """The rule's examples are its tests: each gives the status it names, with evidence and a fix when it fires."""
    assert rule.description() and rule.docs.startswith("https://")
    statuses = {ex.status for ex in rule.examples}
    assert statuses & {Status.WARN, Status.FAIL}, "a rule that cannot fire is a defect"
    for ex in rule.examples:
        finding = evaluate_rule(rule, ex.input)
        assert finding.status is ex.status, (rule_id, ex.name, finding.message)
        assert finding.id == rule_id and finding.kind.value == "goodput"
        if finding.status in (Status.WARN, Status.FAIL):
            assert finding.evidence and finding.remediation and finding.remediation.text


def test_a_crashing_rule_is_an_error_result_and_plugins_load_by_entry_point_group():
    from tpudoctor.goodput.rule import GoodputRule

    class Broken(GoodputRule):
        """Breaks."""

        id = "acme-broken"
        title = "broken"

        def evaluate(self, goodput):
            raise KeyError("x")

    assert evaluate_rule(Broken, {}).status is Status.ERROR
    rules = load_family("goodput-rules", extra_sources=[("acme", [Broken])])
    assert "acme-broken" in rules and rules["acme-broken"].source == "acme"
    assert FAMILIES["goodput-rules"].alias_group == "tpudoctor.goodput_rules"
