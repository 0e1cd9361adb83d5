"""One report pipeline for every command: each builds its report object, hands it to
``tpudoctor.documents.prepare`` (scrubbed, redacted with --redact, validated, by the report's kind), renders the
prepared document through ``tpudoctor.rendering.render`` and takes its exit status from
``tpudoctor.findings.exit_code_for``."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
from bench_results import run_result
from paths import REPO as ROOT

from tpudoctor.bench import document as bench_document
from tpudoctor.bench import gate
from tpudoctor.bench.report import BenchReport
from tpudoctor.cli import main
from tpudoctor.documents import (
    InvalidDocumentError,
    compare_document,
    goodput_document,
    prepare,
    profile_document,
    report_kind,
)
from tpudoctor.exitcodes import ExitCode
from tpudoctor.findings import Finding, Report, Status, Target, exit_code_for
from tpudoctor.formats import COMMAND_FORMATS
from tpudoctor.goodput.report import GoodputReport
from tpudoctor.profile.compare_report import PROFILE_HISTORY, CompareReport
from tpudoctor.rendering import EMITTERS, VIEWS, render

GOODPUT_LOG = ROOT / "tests" / "fixtures" / "goodput" / "maxtext_restart.log"
PROFILES = ROOT / "tests" / "fixtures" / "profiles"
HANG_CAPTURE = ROOT / "tests" / "data" / "hang" / "device_step"
BASE_SAMPLES = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0, 998.0, 1003.0]
TOKEN = "ya29.a0AfH6SMBx-secret-token-value"


def _bench_doc(samples=BASE_SAMPLES, *, against=None, **overrides) -> dict:
    """A bench document; with ``against`` (baseline samples) compared with them as the command does."""
    doc = bench_document.build_document(run_result(samples=samples, **overrides), tool_version="0.1.0")
    if against is not None:
        verdict = gate.compare(against, doc["measurement"]["samples"], tolerance=0.05, alpha=0.002)
        doc["comparison"] = {"baseline_file": "baseline.json", "baseline_key": doc["key"],
                             "baseline_created_at": "2024-01-01T00:00:00+00:00", "key_mismatches": [], "allowed_mismatch": False,
                             "gate": verdict.to_dict()}
        bench_document.with_findings(doc)
    return doc


def _history(profiles, verdict: str) -> dict:
    """A history comparison as ``compare --history`` makes it, its gate's verdict set to ``verdict``."""
    from tpudoctor.profile.history import judge_history

    candidate = profiles["jax_input_bound"].to_dict()
    history = [profiles["jax_steady"].to_dict()] * 5
    gate = judge_history(history, candidate, history_names=[f"run{i}.json" for i in range(5)]).to_dict()
    gate.update(verdict=verdict, regressed_by=["step_time_mean_ms"] if verdict == "regression" else [])
    return {"kind": PROFILE_HISTORY, "history": "runs/",
            "candidate": {"source": candidate.get("source"), "verdict": candidate.get("verdict")},
            "comparable": True, "comparability": {"reasons": []}, "forced": False, "gate": gate}


@pytest.fixture(scope="module")
def profiles():
    from tpudoctor.profile.pipeline import analyze

    return {name: analyze(str(PROFILES / name)) for name in ("jax_steady", "jax_input_bound")}


@pytest.fixture(scope="module")
def goodput_doc():
    from tpudoctor.goodput.analyze import analyze_paths

    return analyze_paths([str(GOODPUT_LOG)])


@pytest.fixture(scope="module")
def hang_report():
    from tpudoctor.hang.analyze import analyze
    from tpudoctor.hang.capture import read_dump_dir

    capture = read_dump_dir(str(HANG_CAPTURE))
    return analyze(capture.captures, target=Target(), host=capture.host, started_at=capture.started_at,
                   interval_s=capture.interval_s, samples=capture.samples, digests=list(capture.digests),
                   environment=dict(capture.environment))


@pytest.fixture(scope="module")
def reports(profiles, goodput_doc, hang_report):
    """command -> the report objects it makes (every kind of each command)."""
    from tpudoctor.goodput.compare import compare_goodput
    from tpudoctor.profile.compare import compare

    return {
        "profile analyze": [profiles["jax_steady"]],
        "goodput": [GoodputReport(copy.deepcopy(goodput_doc))],
        "bench": [BenchReport(_bench_doc())],
        "hang": [hang_report],
        "compare": [CompareReport(compare(profiles["jax_steady"], profiles["jax_input_bound"])),
                    CompareReport(_history(profiles, "no_change")),
                    CompareReport(compare_goodput(goodput_doc, goodput_doc))],
    }


def test_every_commands_report_has_a_kind_that_a_renderer_formats_in_each_of_its_formats(reports):
    missing = [(command, report_kind(report), fmt) for command, made in reports.items() for report in made
               for fmt in COMMAND_FORMATS[command]
               if not (report_kind(report) in VIEWS and (fmt == "json" or fmt in EMITTERS))]
    assert missing == []
    kinds = {command: sorted(report_kind(r) for r in made) for command, made in reports.items()}
    assert kinds == {"profile analyze": ["profile"], "goodput": ["goodput"], "bench": ["bench"], "hang": ["hang"],
                     "compare": ["tpudoctor.goodput_compare", "tpudoctor.profile_compare",
                                 "tpudoctor.profile_history"]}


def test_each_kind_is_the_kind_of_its_document(reports):
    for command, made in reports.items():
        for report in made:
            if command != "compare":  # a comparison's report kind is its document's kind by construction
                assert prepare(report, redact=False)["kind"] == report_kind(report), command


@pytest.mark.parametrize("command", ["goodput", "bench", "compare"])
def test_every_format_renders_from_the_one_prepared_document(reports, command):
    for report in reports[command]:
        prepared = prepare(report, redact=True)
        for fmt in COMMAND_FORMATS[command]:
            assert render(prepared, fmt).strip(), (report_kind(report), fmt)


def test_prepare_gives_what_each_kinds_own_preparation_gave(reports, goodput_doc, profiles):
    """The document bytes stay what they were: ``prepare`` dispatches to the per-kind functions."""
    for redact in (False, True):
        assert json.dumps(prepare(GoodputReport(copy.deepcopy(goodput_doc)), redact=redact)) == \
            json.dumps(goodput_document(copy.deepcopy(goodput_doc), redact=redact))
        for report in reports["compare"]:
            assert json.dumps(prepare(report, redact=redact)) == \
                json.dumps(compare_document(copy.deepcopy(report.to_dict()), redact=redact))
        assert json.dumps(prepare(profiles["jax_steady"], redact=redact), sort_keys=True) == \
            json.dumps(profile_document(profiles["jax_steady"], redact=redact), sort_keys=True)


def test_prepare_knows_a_check_report_and_refuses_a_kind_it_does_not_know():
    report = Report(results=[], target=Target(project="acme-prod-42"), host="worker-0")
    assert prepare(report, redact=False)["kind"] == "check"
    assert "acme-prod-42" not in json.dumps(prepare(report, redact=True))

    @dataclasses.dataclass
    class Mystery:
        kind = "mystery"

    with pytest.raises(InvalidDocumentError, match="kind 'mystery'") as caught:
        prepare(Mystery(), redact=False)
    assert caught.value.exit_code == ExitCode.INTERNAL_ERROR


# ---- bench through prepare: secrets always, identities with --redact, the schema -------------------

def test_prepare_scrubs_a_secret_from_a_bench_document_always():
    doc = _bench_doc(against=[s * 1.25 for s in BASE_SAMPLES])
    doc["findings"][0]["evidence"]["baseline_file"] = f"gs://acme-training-data/baseline.json?token={TOKEN}"
    doc["findings"][1]["message"] += f" (curl -H 'Authorization: Bearer {TOKEN}')"
    for redact in (False, True):
        prepared = prepare(BenchReport(doc), redact=redact)
        text = json.dumps(prepared)
        assert TOKEN not in text and "ya29." not in text, redact
        assert ("acme-training-data" in text) is (not redact)
        for fmt in COMMAND_FORMATS["bench"]:
            assert "ya29." not in render(prepared, fmt), fmt
    assert TOKEN in json.dumps(doc), "the report's own document is left as it was"


def test_prepare_redacts_a_bench_documents_host_with_redact_only():
    doc = _bench_doc()
    doc["host"] = "bench-host-7"
    assert prepare(BenchReport(doc), redact=False)["host"] == "bench-host-7"
    redacted = prepare(BenchReport(doc), redact=True)
    assert "bench-host-7" not in json.dumps(redacted) and redacted["host"].startswith("<host")


def test_prepare_validates_a_bench_document_against_its_schema():
    doc = _bench_doc()
    doc["findings"][0]["status"] = "MAYBE"
    with pytest.raises(InvalidDocumentError, match="bench_result.*findings/0/status"):
        prepare(BenchReport(doc), redact=False)


@pytest.fixture
def bench_run(monkeypatch):
    """The next ``tpudoctor bench`` returns this run_result instead of starting TensorFlow."""
    from tpudoctor.bench.launch import RunOutcome
    from tpudoctor.reference_models import result_log

    holder = {}
    monkeypatch.setattr("tpudoctor.bench.product._run_with_progress",
                        lambda request, timeout_s, note=None, update=None: RunOutcome(["python"], True, 0, False, 60.0, 1.0,
                                                              [{"key": result_log.RUN_RESULT,
                                                                "value": holder["result"]}], ""))
    monkeypatch.setattr("tpudoctor.bench.launch.framework_installed", lambda name: True)
    return lambda **kw: holder.update(result=run_result(**kw))


def test_bench_redact_replaces_the_host_in_every_file_it_writes(bench_run, tmp_path, monkeypatch):
    host = "bench-host-7"
    monkeypatch.setattr("tpudoctor.bench.document.socket.gethostname", lambda: host)
    bench_run(samples=BASE_SAMPLES)
    out, junit, summary, baseline = (tmp_path / n for n in ("r.json", "b.xml", "s.md", "base.json"))
    code = main(["bench", "--model", "dense", "--format", "json", "-o", str(out), "--junit", str(junit),
                 "--markdown-summary", str(summary), "--save-baseline", str(baseline), "--redact"])
    assert code == ExitCode.OK
    for path in (out, junit, summary, baseline):
        assert host not in path.read_text(), path.name
    assert json.loads(out.read_text())["host"].startswith("<host")
    assert bench_document.load_baseline(baseline)["comparison"] is None
    bench_run(samples=BASE_SAMPLES)
    plain = tmp_path / "plain.json"
    assert main(["bench", "--model", "dense", "--format", "json", "-o", str(plain)]) == ExitCode.OK
    assert json.loads(plain.read_text())["host"] == host


# ---- one exit-status rule -------------------------------------------------------------------------

def test_exit_code_for_a_bench_regression_is_1_and_0_with_exit_zero():
    report = BenchReport(_bench_doc([s * 0.8 for s in BASE_SAMPLES], against=BASE_SAMPLES))
    assert report.findings[0].status is Status.FAIL and report.findings[0].id == "BENCH-001"
    assert exit_code_for(report) == ExitCode.FINDINGS
    assert exit_code_for(report, exit_zero=True) == ExitCode.OK
    assert exit_code_for(BenchReport(_bench_doc(BASE_SAMPLES, against=BASE_SAMPLES))) == ExitCode.OK
    assert exit_code_for(BenchReport(_bench_doc(loss_end=27.0, loss_dropped=False))) == ExitCode.FINDINGS


def test_exit_code_for_goodput_is_the_min_ettr_gate_and_the_findings_only_under_fail_on(goodput_doc):
    doc = copy.deepcopy(goodput_doc)
    doc["findings"] = [*doc["findings"], {**doc["findings"][0], "status": "FAIL", "severity": "high"}]
    assert any(f.status is Status.FAIL for f in GoodputReport(doc).findings)
    assert exit_code_for(GoodputReport(doc), fail_on=None) == ExitCode.OK  # goodput's default: no --min-ettr, no gate
    assert exit_code_for(GoodputReport(doc), fail_on="fail") == ExitCode.FINDINGS  # --fail-on fail
    for verdict, code in (("failed", ExitCode.FINDINGS), ("passed", ExitCode.OK), ("not_judged", ExitCode.OK)):
        doc["gate"] = {"min_ettr": 0.9, "ettr": 0.5 if verdict != "not_judged" else None, "verdict": verdict,
                       "reason": "ETTR 0.500 < 0.900"}
        assert exit_code_for(GoodputReport(doc), fail_on=None) == code, verdict
    doc["gate"]["verdict"] = "failed"
    assert exit_code_for(GoodputReport(doc), fail_on="fail", exit_zero=True) == ExitCode.OK


def test_exit_code_for_a_comparison_is_1_on_a_regression(reports, profiles):
    profile_compare = reports["compare"][0].to_dict()
    assert exit_code_for(CompareReport({**profile_compare, "regressed": True,
                                        "regressed_by": ["step_time_mean_ms"]})) == ExitCode.FINDINGS
    assert exit_code_for(CompareReport({**profile_compare, "regressed": False, "regressed_by": []})) == ExitCode.OK
    assert exit_code_for(CompareReport(_history(profiles, "regression"))) == ExitCode.FINDINGS
    assert exit_code_for(CompareReport(_history(profiles, "no_change"))) == ExitCode.OK
    with pytest.raises(ValueError, match="not a comparison"):
        CompareReport({"kind": "bench"})


def test_exit_code_for_a_profile_report_judges_its_findings_not_its_per_host_results(profiles):
    report = profiles["jax_input_bound"]
    assert isinstance(report.results, dict)
    statuses = {f.status for f in report.findings}
    expected_warn = ExitCode.FINDINGS if statuses & {Status.FAIL, Status.ERROR, Status.WARN} else ExitCode.OK
    expected_fail = ExitCode.FINDINGS if statuses & {Status.FAIL, Status.ERROR} else ExitCode.OK
    assert exit_code_for(report, fail_on="warn") == expected_warn
    assert exit_code_for(report, fail_on="fail") == expected_fail
    assert expected_warn == ExitCode.FINDINGS, "an input-bound capture has a finding that fired"


def test_exit_code_for_a_hang_and_a_check_report(hang_report):
    assert exit_code_for(hang_report) == exit_code_for(Report(results=list(hang_report.findings)))
    failing = Finding(id="x", step=None, title="x", status=Status.FAIL, message="x")
    assert exit_code_for(Report(results=[failing])) == ExitCode.FINDINGS
    assert exit_code_for(Report(results=[failing]), exit_zero=True) == ExitCode.OK


# ---- every command runs the one skeleton -----------------------------------------------------------

def _subcommands(parser, path=()):
    """(``tpudoctor ...`` words, parser) of every registered sub-command, nested ones (``profile analyze``) too."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _subcommands(sub, (*path, name))


def test_every_registered_subcommand_runs_through_the_one_skeleton():
    """Issue 39: every sub-command's handler is a ``Product`` that ``cli.run_product`` runs (a command group such
    as ``profile`` has none: its help), and its ``--format`` offers exactly the formats the skeleton renders."""
    from tpudoctor.cli import build_parser
    from tpudoctor.product import Product

    seen = []
    for words, sub in _subcommands(build_parser()):
        handler = sub.get_default("handler")
        if handler is None and sub.get_default("help_parser") is sub:
            continue
        assert isinstance(handler, Product), (words, handler)
        formats = next((a.choices for a in sub._actions if "--format" in a.option_strings), None)
        assert tuple(formats or ()) == handler.formats, words
        seen.append(" ".join(words))
    assert {"check", "merge", "profile analyze", "profile capture", "bench", "goodput", "compare", "explain",
            "list-checks", "list-signatures", "docs", "diag", "hang", "memory"} <= set(seen)


FORBIDDEN_IN_COMMANDS = {"write_text", "check_output", "exit_code_for", "prepare", "render", "print", "stdout",
                         "ExitCode", "Gate", "gate_for"}
"""What only the skeleton does: write, refuse outputs, prepare, render, print, decide the exit status."""


@pytest.mark.parametrize("module", sorted((ROOT / "tpudoctor" / "commands").glob("*.py")), ids=lambda p: p.stem)
def test_no_command_module_writes_renders_or_exits_by_itself(module):
    """A command module declares flags and its ``Product``; a name that writes, renders, prints or picks an
    exit status is a command bypassing the skeleton."""
    import ast

    tree = ast.parse(module.read_text(encoding="utf-8"))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    used |= {alias.asname or alias.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for alias in n.names}
    assert not used & FORBIDDEN_IN_COMMANDS, (module.name, sorted(used & FORBIDDEN_IN_COMMANDS))
    assert not any(isinstance(n, ast.FunctionDef) and n.name.startswith("run") for n in tree.body), module.name
