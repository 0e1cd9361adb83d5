from __future__ import annotations

import json

from sample_reports import healthy_report, preempted_node_report

from tpudoctor.exitcodes import ExitCode
from tpudoctor.findings import (
    CheckResult,
    Report,
    Severity,
    Status,
    Step,
    exit_code_for,
    root_cause,
    worst_status,
)
from tpudoctor.schema import validate


def test_root_cause_is_the_earliest_failure_not_the_first_listed():
    late = CheckResult("LOGS-009", Step.LOGS, "t", Status.FAIL, "m", Severity.CRITICAL)
    early = CheckResult("GCS-001", Step.GCS, "t", Status.FAIL, "m", Severity.LOW)
    assert root_cause([late, early]) is early


def test_root_cause_prefers_fail_over_error_and_none_when_clean():
    error = CheckResult("NODE-001", Step.NODE, "t", Status.ERROR, "m")
    fail = CheckResult("LOGS-001", Step.LOGS, "t", Status.FAIL, "m")
    assert root_cause([error, fail]) is fail
    assert root_cause([error]) is error
    assert root_cause([CheckResult("A-001", Step.NODE, "t", Status.WARN, "m")]) is None


def test_summary_counts_every_status():
    summary = preempted_node_report().summary
    assert summary.counts == {"PASS": 1, "WARN": 1, "FAIL": 1, "SKIP": 1, "ERROR": 1}
    assert summary.root_cause == "NODE-001"


def test_report_round_trips_through_json_and_matches_the_schema():
    report = preempted_node_report()
    doc = json.loads(json.dumps(report.to_dict()))
    validate(doc, "check_report")
    again = Report.from_dict(doc)
    assert again.to_dict() == doc


def test_schema_rejects_a_skip_without_reason_and_unknown_status():
    import jsonschema
    import pytest

    doc = healthy_report().to_dict()
    bad = json.loads(json.dumps(doc))
    bad["results"][0]["status"] = "MAYBE"
    with pytest.raises(jsonschema.ValidationError):
        validate(bad, "check_report")
    skip = json.loads(json.dumps(doc))
    skip["results"][0].update(status="SKIP", skip_reason=None)
    with pytest.raises(jsonschema.ValidationError):
        validate(skip, "check_report")


def test_evidence_is_made_json_safe():
    import numpy as np

    r = CheckResult("A-001", Step.NODE, "t", Status.PASS, "m",
                    evidence={"n": np.int64(3), "t": (1, 2), "s": Status.PASS, "o": object})
    ev = r.to_dict()["evidence"]
    assert ev["n"] == 3 and ev["t"] == [1, 2] and ev["s"] == "PASS" and isinstance(ev["o"], str)
    json.dumps(ev)


def test_every_result_carries_a_scope_and_a_kind_in_json():
    from tpudoctor.findings import FindingKind, Scope

    scoped = CheckResult("NODE-004", Step.NODE, "chips", Status.FAIL, "m",
                         scope=Scope.of(workers=[7, 3, 10]))
    doc = scoped.to_dict()
    assert doc["scope"] == {"workers": ["3", "7", "10"], "hosts": [], "chips": []}
    assert doc["kind"] == "check" and doc["id"] == "NODE-004"
    profile = CheckResult("PROFILE-001", None, "input", Status.WARN, "m", kind=FindingKind.PROFILE)
    assert profile.to_dict()["step"] is None and profile.to_dict()["scope"]["hosts"] == []
    assert CheckResult.from_dict(doc) == scoped


def test_scope_union_is_sorted_naturally_and_empty_means_whole():
    from tpudoctor.findings import Scope

    assert Scope().is_whole
    merged = Scope.of(workers=["9", "10"]).union(Scope.of(workers=["2"], hosts=["h1"]))
    assert merged.workers == ("2", "9", "10") and merged.hosts == ("h1",) and not merged.is_whole


def test_a_version_1_report_still_reads(tmp_path):
    from tpudoctor.findings import SCHEMA_VERSION
    from tpudoctor.report_file import load_check_report

    doc = preempted_node_report().to_dict()
    for result in doc["results"]:
        result["check_id"] = result.pop("id")
        del result["scope"], result["kind"]
    doc["schema_version"] = "1.0"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    report = load_check_report(path)
    assert report.summary.root_cause == "NODE-001"
    assert report.schema_version == SCHEMA_VERSION and all(r.scope.is_whole for r in report.results)
    validate(report.to_dict(), "check_report")


def test_profile_and_bench_findings_sort_after_the_triage_chain():
    from tpudoctor.findings import FindingKind

    bench = CheckResult("BENCH-001", None, "throughput", Status.FAIL, "m", kind=FindingKind.BENCH)
    logs = CheckResult("LOGS-001", Step.LOGS, "t", Status.FAIL, "m")
    assert root_cause([bench, logs]) is logs
    assert [r.id for r in Report(results=[bench, logs]).ordered_results()] == ["LOGS-001", "BENCH-001"]


def test_worst_status_is_the_worst_problem_else_pass_else_skip():
    assert worst_status([Status.PASS, Status.WARN, Status.ERROR, Status.SKIP]) is Status.ERROR
    assert worst_status([Status.ERROR, Status.FAIL]) is Status.FAIL  # FAIL outranks ERROR
    assert worst_status([Status.PASS, Status.SKIP]) is Status.PASS
    assert worst_status([Status.SKIP]) is Status.SKIP
    assert worst_status([]) is Status.SKIP  # nothing given: nothing ran


def test_exit_code_follows_the_fail_level_on_any_report_shape():
    def report(*statuses):
        return Report(results=[CheckResult(f"A-00{i}", Step.NODE, "t", s, "m") for i, s in enumerate(statuses)])

    assert exit_code_for(report(Status.PASS, Status.SKIP)) is ExitCode.OK
    assert exit_code_for(report(Status.ERROR)) is ExitCode.FINDINGS  # the check could not judge: not ok
    assert exit_code_for(report(Status.WARN)) is ExitCode.OK
    assert exit_code_for(report(Status.WARN), fail_on="warn") is ExitCode.FINDINGS
    assert exit_code_for(report(Status.FAIL), exit_zero=True) is ExitCode.OK
