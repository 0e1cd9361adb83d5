"""Step 5 (REFERENCE-001): examples, the real subprocess on this machine, failures through the catalog."""

from __future__ import annotations

import stat
import sys

import pytest

from tpudoctor.bench.launch import RunRequest, launch
from tpudoctor.checks.reference.reference_model_trains import ReferenceModelTrains
from tpudoctor.context import CheckOptions, RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.families import load_registry
from tpudoctor.findings import Status
from tpudoctor.providers.reference_run import ReferenceRunProvider
from tpudoctor.runner import Runner
from tpudoctor.testing import assert_status, conformance_problems, run_check


def test_check_conforms_and_its_examples_hold():
    registry = load_registry(plugins=False)
    assert conformance_problems(ReferenceModelTrains, set(registry.providers)) == []
    assert registry.provider_for("reference.run") is ReferenceRunProvider


def _fact_from(outcome, model="dense"):
    return {"reference.run": {"model": model, **outcome.to_fact()}}


@pytest.mark.slow
def test_dense_trains_on_this_machine_and_passes_with_throughput():
    ctx = RunContext(options=CheckOptions(reference_timeout_s=240))
    facts = ReferenceRunProvider().gather(ctx, Facts({}))
    result = run_check(ReferenceModelTrains, facts)
    assert_status(result, Status.PASS)
    assert result.evidence["examples_per_s"] > 0
    assert result.evidence["compile_time_ms"] > 0
    assert result.evidence["loss_end"] < result.evidence["loss_start"]
    assert "examples/s" in result.message and "compile" in result.message


@pytest.mark.slow
def test_asking_for_a_tpu_that_is_not_there_fails_with_the_framework_error():
    outcome = launch(RunRequest(model="dense", steps=2, repeats=1, accelerator="tpu"), timeout_s=180)
    result = run_check(ReferenceModelTrains, _fact_from(outcome))
    assert_status(result, Status.FAIL)
    assert outcome.returncode == 3
    assert "NotFoundError" in result.message and "TPUs not found" in result.message
    assert "TPUClusterResolver" in result.evidence["output_tail"] or "initialize_tpu_system" in result.evidence["output_tail"]
    assert result.remediation is not None and result.remediation.commands


def _fake_interpreter(tmp_path, text, exit_code):
    """An interpreter that fails the way a broken TPU runtime does, to drive the real launcher."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{text}\nEOF\nexit {exit_code}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_failing_run_is_classified_through_the_log_catalog(tmp_path):
    pytest.importorskip("tpudoctor.logdiag")
    text = ("Traceback (most recent call last):\n"
            "RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process "
            "with pid 4242. Not attempting to load libtpu.so in this process.")
    outcome = launch(RunRequest(model="dense"), timeout_s=30, python=_fake_interpreter(tmp_path, text, 1))
    assert outcome.started and outcome.returncode == 1 and outcome.result is None
    result = run_check(ReferenceModelTrains, _fact_from(outcome))
    assert_status(result, Status.FAIL)
    ids = [d["signature_id"] for d in result.evidence["diagnoses"]]
    assert ids[0] == "tpu-in-use"
    assert "log catalog: tpu-in-use" in result.message
    assert any("lsof" in c or "tpu-info" in c for c in result.remediation.commands)


def test_a_hung_run_is_killed_at_the_timeout(tmp_path):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho 'TPU backend initialization is taking more than 60.0 seconds'\nsleep 60\n")
    script.chmod(0o755)
    outcome = launch(RunRequest(model="dense"), timeout_s=1.0, python=str(script))
    assert outcome.timed_out and outcome.duration_s < 15
    result = run_check(ReferenceModelTrains, _fact_from(outcome))
    assert_status(result, Status.FAIL)
    assert "did not finish within 1s" in result.message


def test_an_interpreter_that_cannot_start_fails(tmp_path):
    outcome = launch(RunRequest(model="dense"), timeout_s=5, python=str(tmp_path / "missing-python"))
    assert not outcome.started
    result = run_check(ReferenceModelTrains, _fact_from(outcome))
    assert_status(result, Status.FAIL)
    assert "could not start" in result.message


def test_without_tensorflow_the_check_skips_with_a_reason(monkeypatch):
    monkeypatch.setattr("tpudoctor.bench.launch.tensorflow_installed", lambda python=None: False)
    facts = ReferenceRunProvider().gather(RunContext(), Facts({}))
    assert isinstance(facts["reference.run"], Unavailable)
    result = run_check(ReferenceModelTrains, facts)
    assert_status(result, Status.SKIP)
    assert "TensorFlow is not installed" in result.message


def test_unknown_reference_model_is_an_error_not_a_run():
    ctx = RunContext(options=CheckOptions(reference_model="gpt5"))
    with pytest.raises(ValueError, match="unknown reference model 'gpt5'"):
        ReferenceRunProvider().gather(ctx, Facts({}))


def test_the_run_is_not_started_when_step_5_is_blocked_or_not_selected(monkeypatch):
    started = []
    monkeypatch.setattr(ReferenceRunProvider, "gather",
                        lambda self, ctx, facts: started.append(1) or {"reference.run": Unavailable("x")})
    from tpudoctor.providers.python_env import PythonEnvProvider

    old_python = {"python.version": "3.8.18", "python.implementation": "CPython",
                  "python.executable": "/usr/bin/python3.8", "packages.installed": {}}
    monkeypatch.setattr(PythonEnvProvider, "gather", lambda self, ctx, facts: old_python)
    registry = load_registry(plugins=False)
    runtime = registry.checks["RUNTIME-001"]
    reference = registry.checks["REFERENCE-001"]
    # Blocked: the interpreter check fails, so step 5 is skipped without starting the model.
    report = Runner(registry, RunContext()).run([runtime, reference])
    by_id = {r.id: r for r in report.results}
    assert by_id["RUNTIME-001"].status is Status.FAIL
    assert by_id["REFERENCE-001"].status is Status.SKIP and "blocked by RUNTIME-001" in by_id["REFERENCE-001"].message
    # Not selected: a step 3 run never gathers reference.run.
    Runner(registry, RunContext()).run([runtime])
    assert started == []


def test_the_subprocess_timeout_follows_the_options(monkeypatch):
    seen = {}

    def fake_launch(request, *, timeout_s, **kwargs):
        seen.update(timeout_s=timeout_s, steps=request.steps, repeats=request.repeats, model=request.model)
        from tpudoctor.bench.launch import RunOutcome
        return RunOutcome([sys.executable], True, 0, False, timeout_s, 0.1, [], "")

    monkeypatch.setattr("tpudoctor.bench.launch.launch", fake_launch)
    ReferenceRunProvider().gather(RunContext(options=CheckOptions(reference_model="mlp", reference_timeout_s=42)),
                                  Facts({}))
    assert seen["timeout_s"] == 42 and seen["model"] == "mlp"
