"""The bench/baseline document: schema, loading errors (exit 2), and the renderers."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import jsonschema
import pytest
from bench_results import run_result

from tpudoctor.bench import document, gate
from tpudoctor.errors import InputError
from tpudoctor.exitcodes import ExitCode


def test_document_matches_its_schema_and_carries_the_key():
    doc = document.build_document(run_result(), tool_version="0.1.0")
    document.validate_document(doc)
    assert doc["schema_version"] == document.SCHEMA_VERSION
    assert set(doc["key"]) == set(gate.KEY_FIELDS)
    assert doc["metric"]["direction"] == "higher_is_better"
    assert doc["measurement"]["samples"] == [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0]
    assert doc["measurement"]["median"] == pytest.approx(1001.0)


def test_schema_rejects_a_document_without_samples():
    doc = document.build_document(run_result(), tool_version="0.1.0")
    del doc["measurement"]["samples"]
    with pytest.raises(jsonschema.ValidationError):
        document.validate_document(doc)


def test_load_baseline_round_trip(tmp_path):
    path = tmp_path / "baseline.json"
    doc = document.build_document(run_result(), tool_version="0.1.0")
    path.write_text(json.dumps(document.as_baseline(doc)))
    assert document.load_baseline(path)["key"] == doc["key"]


@pytest.mark.parametrize("content,message", [
    (None, "does not exist"),
    ("{not json", "not valid JSON"),
    (json.dumps({"schema_version": "7.0"}), "schema_version '7.0'"),
    (json.dumps({"schema_version": "1.0", "kind": "bench"}), "not a tpudoctor bench document"),
])
def test_bad_baseline_files_are_input_errors(tmp_path, content, message):
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(InputError, match=message) as info:
        document.load_baseline(path)
    assert info.value.exit_code == ExitCode.USAGE_ERROR


def _compared(current_samples):
    base = document.build_document(run_result(), tool_version="0.1.0")
    doc = document.build_document(run_result(samples=current_samples), tool_version="0.1.0")
    verdict = gate.compare(base["measurement"]["samples"], doc["measurement"]["samples"])
    doc["comparison"] = {"baseline_file": "b.json", "baseline_key": base["key"], "key_mismatches": [],
                         "allowed_mismatch": False, "gate": verdict.to_dict()}
    document.with_findings(doc)
    document.validate_document(doc)
    return doc


def test_renderers_show_a_regression():
    from tpudoctor.rendering import render

    doc = _compared([800.0, 805.0, 795.0, 802.0, 798.0, 801.0])
    junit = ET.fromstring(render(doc, "junit"))
    suite = junit.find("testsuite")
    assert suite.get("failures") == "1"
    failure = suite.find("testcase[@name='BENCH-001 throughput vs baseline']/failure")
    assert failure is not None and failure.get("type") == "high"
    assert "-20.0%" in failure.get("message") and "$ tpudoctor profile analyze" in failure.text
    markdown = render(doc, "markdown")
    assert "REGRESSION" in markdown and "| examples/s (median) | 1,001.0 | 800.5 |" in markdown
    assert "REGRESSION: -20.0% vs baseline" in render(doc, "text")
    assert json.loads(render(doc, "json"))["comparison"]["gate"]["verdict"] == "regression"


def test_renderers_without_a_baseline_skip_the_gate_testcase():
    from tpudoctor.rendering import render

    doc = document.build_document(run_result(), tool_version="0.1.0")
    suite = ET.fromstring(render(doc, "junit")).find("testsuite")
    assert suite.find("testcase[@name='BENCH-001 throughput vs baseline']/skipped") is not None
    assert suite.find("testcase[@name='BENCH-002 loss drops']") is not None
    assert suite.get("failures") == "0"
    assert "[✓] BENCH-002 loss drops: loss 26 -> 0.3" in render(doc, "text")  # the loss said by its finding


def _findings(doc):
    return {f["id"]: f for f in doc["findings"]}


def test_a_significant_regression_is_a_bench_finding_shaped_like_a_check_result():
    from tpudoctor.schema import load_schema

    doc = _compared([800.0, 805.0, 795.0, 802.0, 798.0, 801.0])
    gate_finding = _findings(doc)["BENCH-001"]
    assert set(gate_finding) == set(load_schema("check_report")["$defs"]["result"]["required"])
    assert (gate_finding["kind"], gate_finding["status"], gate_finding["severity"]) == ("bench", "FAIL", "high")
    assert gate_finding["step"] is None
    assert gate_finding["scope"] == {"workers": [], "hosts": [], "chips": []}
    assert gate_finding["evidence"]["baseline_median_examples_per_s"] == pytest.approx(1001.0)
    assert gate_finding["evidence"]["current_median_examples_per_s"] == pytest.approx(800.5)
    assert gate_finding["evidence"]["p_value"] < gate_finding["evidence"]["alpha"]
    assert any("--profile" in c for c in gate_finding["remediation"]["commands"])
    assert _findings(doc)["BENCH-002"]["status"] == "PASS"


def test_a_drop_beyond_tolerance_within_noise_is_a_warning_asking_for_more_windows():
    # medians 1001 -> ~900, but the current windows straddle the baseline: not significant
    doc = _compared([600.0, 1200.0, 700.0, 1100.0, 900.0, 880.0])
    gate_finding = _findings(doc)["BENCH-001"]
    assert doc["comparison"]["gate"]["verdict"] == "no_change"
    assert gate_finding["status"] == "WARN", gate_finding["message"]
    assert "--repeats 12" in gate_finding["remediation"]["commands"][0]


def test_no_change_passes_and_no_baseline_skips():
    doc = _compared([1001.0, 1003.0, 998.0, 1000.0, 1004.0, 999.0])
    assert _findings(doc)["BENCH-001"]["status"] == "PASS"
    alone = document.build_document(run_result(), tool_version="0.1.0")
    skipped = _findings(alone)["BENCH-001"]
    assert skipped["status"] == "SKIP" and skipped["skip_reason"] == "no --baseline given"


def test_a_model_that_does_not_learn_is_a_failing_bench_finding():
    doc = document.build_document(run_result(loss_end=26.5, loss_dropped=False), tool_version="0.1.0")
    document.validate_document(doc)
    training = _findings(doc)["BENCH-002"]
    assert training["status"] == "FAIL" and "did not drop" in training["message"]


def test_a_comparison_under_a_different_key_is_a_warning():
    doc = _compared([1001.0, 1003.0, 998.0, 1000.0, 1004.0, 999.0])
    doc["comparison"]["key_mismatches"] = [{"field": "framework_version", "baseline": "2.20.0", "current": "2.21.0"}]
    doc["comparison"]["allowed_mismatch"] = True
    document.with_findings(doc)
    gate_finding = _findings(doc)["BENCH-001"]
    assert gate_finding["status"] == "WARN" and "framework_version" in gate_finding["message"]


def test_a_bench_finding_that_breaks_the_result_shape_is_rejected_by_the_schema():
    doc = document.build_document(run_result(), tool_version="0.1.0")
    del doc["findings"][0]["scope"]
    with pytest.raises(jsonschema.ValidationError):
        document.validate_document(doc)


def test_a_1_0_baseline_without_findings_still_reads(tmp_path):
    doc = document.as_baseline(document.build_document(run_result(), tool_version="0.1.0"))
    doc["schema_version"] = "1.0"
    del doc["findings"]
    path = tmp_path / "old-baseline.json"
    path.write_text(json.dumps(doc))
    assert document.load_baseline(path)["measurement"]["samples"] == doc["measurement"]["samples"]
