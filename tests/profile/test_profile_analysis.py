"""Verdicts and figures of the profile analyses on the committed real TF/JAX CPU captures."""

from __future__ import annotations

import json

import pytest
from paths import TESTS

import tpudoctor.profile
from tpudoctor.cli import main
from tpudoctor.families import load_rules as load_family
from tpudoctor.schema import validate


def load_rules(*args, **kwargs):
    return load_family("profile-rules", *args, **kwargs)

FIXTURES = TESTS / "fixtures" / "profiles"
RULES = load_rules(plugins=False)


def fixes(finding: dict) -> list[str]:
    return (finding["remediation"] or {}).get("text", "").splitlines()

EXPECTED = {
    "jax_compute_bound": "device-bound",
    "jax_input_bound": "input-bound",
    "jax_recompiling": "compile-bound",
    "jax_steady": "device-bound",
    "jax_host_callback": "host-bound",
    "tf_input_bound": "input-bound",
    "tf_compute_bound": "device-bound",
    "tf_retracing": "compile-bound",
    "tf_eager": "host-bound",
}


@pytest.fixture(scope="module")
def docs():
    return {case: tpudoctor.profile.analyze(str(FIXTURES / case)).to_dict() for case in EXPECTED}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_fixture_verdict(docs, case):
    doc = docs[case]
    assert doc["verdict"] == EXPECTED[case], doc["verdict_reason"]
    validate(doc, "profile_diagnosis")
    if doc["verdict"] not in ("device-bound", "unknown"):
        # the finding that explains the verdict comes first, with its evidence and fixes
        lead = doc["findings"][0]
        assert RULES[lead["id"]].bottleneck == doc["verdict"]
        assert lead["severity"] == "high" and lead["status"] == "FAIL" and fixes(lead)


def test_eager_loop_is_blamed_on_eager_execution_with_the_tf_function_fix(docs):
    doc = docs["tf_eager"]
    lead = doc["findings"][0]
    assert lead["id"] == "eager-execution"
    assert lead["evidence"]["share_of_capture_percent"] >= 20
    assert any("tf.function" in fix for fix in fixes(lead))
    assert not any(f["id"] == "eager-execution" for case, d in docs.items() if case != "tf_eager" for f in d["findings"])


def test_input_bound_names_the_loader_and_the_threshold(docs):
    jax = docs["jax_input_bound"]
    finding = next(f for f in jax["findings"] if f["id"] == "input-bound")
    assert finding["evidence"]["classification"] == "highly"
    assert "load_batch" in finding["evidence"]["largest_input_stage"]
    assert jax["kpis"]["input_percent"] >= 20
    tf = docs["tf_input_bound"]
    assert any("IteratorGetNext" in s["stage"] for s in tf["breakdown"]["input_stages"])
    assert any("prefetch" in fix for f in tf["findings"] if f["id"] == "input-bound" for fix in fixes(f))
    # device-bound runs stay under xprof's moderately-input-bound threshold
    assert docs["jax_compute_bound"]["kpis"]["input_percent"] < 5


def test_recompilation_counts_each_function(docs):
    jax = docs["jax_recompiling"]["recompilation"]
    fn = {f["function"]: f for f in jax["functions"]}
    assert fn["train_step"]["compile_count"] == 8
    assert fn["train_step"]["program_variants"] == 8  # eight shapes -> eight executables
    tf = docs["tf_retracing"]["recompilation"]
    assert {f["function"]: f["compile_count"] for f in tf["functions"]}["train_step"] == 8
    assert {f["function"]: f["program_variants"] for f in tf["functions"]}["train_step"] == 8  # 8 concrete functions
    finding = next(f for f in docs["tf_retracing"]["findings"] if f["id"] == "recompilation")
    assert any("reduce_retracing=True" in fix for fix in fixes(finding))
    # warmed up before the window: no compilation counted
    assert docs["jax_steady"]["recompilation"]["compile_count"] == 0
    assert docs["jax_compute_bound"]["recompilation"]["compile_count"] == 0


def test_step_methods(docs):
    assert docs["jax_steady"]["steps"]["method"] == "pseudo-steps-host-program-runs"
    assert docs["jax_steady"]["steps"]["program"] == "PjitFunction(train_step)"
    assert any(f["id"] == "no-step-markers" for f in docs["jax_steady"]["findings"])
    assert docs["jax_compute_bound"]["steps"]["method"] == "host-step-annotations"
    assert docs["jax_compute_bound"]["steps"]["count"] == 8
    assert docs["tf_compute_bound"]["steps"]["program"] == "multi_step_on_iterator"  # Keras fit steps


def test_host_callback_evidence(docs):
    finding = next(f for f in docs["jax_host_callback"]["findings"] if f["id"] == "host-callback")
    names = {c["name"] for c in finding["evidence"]["callbacks"]}
    assert any(n.startswith("pure_callback") for n in names)
    assert any(n.startswith("debug_print") for n in names)


def test_breakdown_parts_add_up(docs):
    for case, doc in docs.items():
        for step in doc["breakdown"]["per_step"]:
            parts = sum(step[k] or 0 for k in ("compute_ms", "input_ms", "idle_ms", "compile_ms", "host_callback_ms",
                                               "host_offload_ms", "outfeed_ms", "host_transfer_ms", "other_ms"))
            assert parts == pytest.approx(step["step_ms"], abs=2e-3), case  # the document rounds to 4 decimals


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html"])
def test_profile_analyze_formats(tmp_path, capsys, fmt):
    out = tmp_path / f"report.{fmt}"
    assert main(["profile", "analyze", str(FIXTURES / "tf_retracing"), "--format", fmt, "-o", str(out)]) == 1  # its FAIL findings, as every report
    text = out.read_text()
    if fmt == "json":
        doc = json.loads(text)
        assert doc["verdict"] == "compile-bound"
        assert doc["summary"]  # issue-6's capture summary stays in the document
        validate(doc, "profile_diagnosis")
    else:
        assert "compile-bound" in text.lower() and "recompilation" in text
    if fmt == "html":
        assert "<svg" in text and "<table>" in text and "http://" not in text.replace(
            'xmlns="http://www.w3.org/2000/svg"', "")


def test_compare_detects_regression(tmp_path, capsys):
    a = tmp_path / "a.json"
    assert main(["profile", "analyze", str(FIXTURES / "jax_steady"), "--format", "json", "-o", str(a)]) == 0
    assert main(["compare", str(a), str(a), "--fail-on-regression", "5%"]) == 0
    capsys.readouterr()
    rc = main(["compare", str(a), str(FIXTURES / "jax_recompiling"), "--fail-on-regression", "5%",
               "--format", "markdown"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "| step_time_mean_ms |" in out and "WORSE" in out and "REGRESSION" in out
    assert main(["compare", str(a), str(tmp_path / "missing.json")]) == 2
    assert main(["compare", str(a), str(a), "--fail-on-regression", "lots"]) == 2
    check_report = tmp_path / "check.json"
    check_report.write_text(json.dumps({"schema_version": "1.0", "kind": "check", "results": []}))
    capsys.readouterr()
    assert main(["compare", str(a), str(check_report)]) == 2
    assert "is not a tpudoctor profile report" in capsys.readouterr().err
