"""Exit codes, formats and flags of ``tpudoctor check`` (in-process, engine checks injected)."""

from __future__ import annotations

import json

import engine_fixtures as ef
import pytest
from sample_reports import healthy_report, preempted_node_report

from tpudoctor import cli
from tpudoctor import families as registry_module
from tpudoctor.exitcodes import ExitCode
from tpudoctor.families import Registry
from tpudoctor.findings import exit_code_for
from tpudoctor.schema import validate


@pytest.fixture
def engine_registry(monkeypatch):
    checks = (ef.NodeReady, ef.NeedsNode, ef.WarnsOnly)
    providers = {"engine.node_state": ef.NodeFacts}
    monkeypatch.setattr(registry_module, "load_registry",
                        lambda *a, **k: Registry(checks={c.id: c for c in checks}, providers=providers))


def test_exit_code_levels():
    failing, clean = preempted_node_report(), healthy_report()
    assert exit_code_for(failing) is ExitCode.FINDINGS
    assert exit_code_for(clean) is ExitCode.OK
    assert exit_code_for(failing, exit_zero=True) is ExitCode.OK
    warn_only = preempted_node_report()
    warn_only.results = [r for r in warn_only.results if r.status.value in ("WARN", "PASS")]
    assert exit_code_for(warn_only) is ExitCode.OK
    assert exit_code_for(warn_only, fail_on="warn") is ExitCode.FINDINGS


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "junit", "html"])
def test_format_never_changes_the_exit_code(engine_registry, capsys, fmt, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--format", fmt]) == ExitCode.FINDINGS
    out = capsys.readouterr().out
    assert "ENG-001" in out
    if fmt == "json":
        doc = json.loads(out)
        validate(doc, "check_report")
        assert doc["summary"]["root_cause"] == "ENG-001"
        statuses = {r["id"]: r["status"] for r in doc["results"]}
        assert statuses == {"ENG-001": "FAIL", "ENG-002": "SKIP", "ENG-009": "WARN"}


def test_selection_by_id_and_step(engine_registry, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "ENG-009", "--format", "json"]) == ExitCode.OK
    assert [r["id"] for r in json.loads(capsys.readouterr().out)["results"]] == ["ENG-009"]
    assert cli.main(["check", "--step", "3", "--fail-on", "warn", "--format", "json"]) == ExitCode.FINDINGS
    capsys.readouterr()


def test_env_format_and_output_file(engine_registry, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TPUDOCTOR_FORMAT", "json")
    assert cli.main(["check", "-o", "out/report.json"]) == ExitCode.FINDINGS
    assert capsys.readouterr().out == ""
    validate(json.loads((tmp_path / "out" / "report.json").read_text()), "check_report")


@pytest.mark.parametrize("argv,needle", [
    (["check", "NOPE-999"], "unknown check id"),
    (["check", "--timeout", "soon"], "not a duration"),
    (["check", "--since", "-"], "not a duration"),
])
def test_usage_errors_exit_2_without_traceback(engine_registry, capsys, argv, needle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["check", "--step", "9"], ["frobnicate"], ["check", "--format", "yaml"]])
def test_argparse_errors_use_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == ExitCode.USAGE_ERROR
    assert "tpudoctor: error:" in capsys.readouterr().err


def test_config_file_supplies_the_target(engine_registry, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpudoctor.toml").write_text('project = "from-file"\nzone = "us-east5-a"\ntpu = "n1"\n')
    monkeypatch.setenv("CLOUDSDK_COMPUTE_ZONE", "europe-west4-a")
    cli.main(["check", "--format", "json", "--project", "from-flag"])
    target = json.loads(capsys.readouterr().out)["target"]
    assert target == {"project": "from-flag", "zone": "europe-west4-a", "tpu": "n1", "worker": None}


def test_bad_config_file_is_a_usage_error(engine_registry, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpudoctor.toml").write_text("projcet = 'typo'\n")
    assert cli.main(["check"]) == ExitCode.USAGE_ERROR
    assert "unknown setting(s) projcet" in capsys.readouterr().err


def test_internal_error_exits_3_with_a_clear_message(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)

    def broken(*a, **k):
        raise RuntimeError("registry exploded")

    monkeypatch.setattr(registry_module, "load_registry", broken)
    assert cli.main(["check"]) == ExitCode.INTERNAL_ERROR
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: registry exploded" in err and "Traceback" not in err


def test_output_never_follows_a_symlink(engine_registry, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "report.json").symlink_to(victim)
    assert cli.main(["check", "--format", "json", "-o", "report.json"]) == ExitCode.USAGE_ERROR
    assert victim.read_text() == "keep me"
    assert "symbolic link" in capsys.readouterr().err



@pytest.fixture
def run_context_spy(engine_registry, monkeypatch):
    """The RunContext ``check`` builds from flags, environment and config file."""
    import tpudoctor.runner as runner_module

    seen = {}
    real = runner_module.Runner

    class Spy(real):
        def __init__(self, registry, ctx, **kwargs):
            seen["ctx"] = ctx
            super().__init__(registry, ctx, **kwargs)

    monkeypatch.setattr(runner_module, "Runner", Spy)
    return seen


def test_an_explicit_flag_equal_to_the_default_still_beats_the_config_file(run_context_spy, capsys, tmp_path,
                                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpudoctor.toml").write_text(
        'timeout = "30s"\napi_timeout = "3s"\nreference_timeout = "20s"\nsince = "2h"\n')
    cli.main(["check", "ENG-009", "--timeout", "600s", "--api-timeout", "10s", "--reference-timeout", "300s",
              "--since", "1h"])
    ctx = run_context_spy["ctx"]
    assert ctx.run_timeout_s == 600
    assert (ctx.options.api_timeout_s, ctx.options.reference_timeout_s, ctx.options.since_s) == (10, 300, 3600)
    capsys.readouterr()


def test_config_file_sets_timeouts_when_no_flag_is_given(run_context_spy, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpudoctor.toml").write_text('timeout = "30s"\napi_timeout = "3s"\nreference_timeout = "20s"\n')
    cli.main(["check", "ENG-009"])
    ctx = run_context_spy["ctx"]
    assert (ctx.run_timeout_s, ctx.options.api_timeout_s, ctx.options.reference_timeout_s) == (30, 3, 20)
    capsys.readouterr()
    (tmp_path / "tpudoctor.toml").unlink()
    cli.main(["check", "ENG-009"])
    ctx = run_context_spy["ctx"]
    assert (ctx.run_timeout_s, ctx.options.api_timeout_s, ctx.options.reference_timeout_s) == (600, 10, 300)
    capsys.readouterr()


def test_environment_format_beats_the_config_file_and_the_flag_beats_both(engine_registry, capsys, tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpudoctor.toml").write_text('format = "markdown"\n')
    cli.main(["check", "ENG-009"])
    assert capsys.readouterr().out.lstrip().startswith("#")  # the config file alone decides
    monkeypatch.setenv("TPUDOCTOR_FORMAT", "json")
    cli.main(["check", "ENG-009"])
    assert json.loads(capsys.readouterr().out)["results"][0]["id"] == "ENG-009"
    cli.main(["check", "ENG-009", "--format", "junit"])
    assert capsys.readouterr().out.startswith("<?xml")


def test_an_unknown_format_in_the_config_file_is_a_usage_error(engine_registry, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpudoctor.toml").write_text('format = "yaml"\n')
    assert cli.main(["check"]) == ExitCode.USAGE_ERROR
    assert "format 'yaml'" in capsys.readouterr().err


def test_profile_capture_reads_the_target_from_the_config_file(capsys, tmp_path, monkeypatch):
    from types import SimpleNamespace

    import tpudoctor.profile.remote as remote

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpudoctor.toml").write_text('project = "from-file"\nzone = "us-east5-a"\n')
    monkeypatch.setenv("CLOUDSDK_COMPUTE_ZONE", "europe-west4-a")
    asked = {}

    def addresses(name, **kwargs):
        asked.update(kwargs, name=name)
        return ["10.0.0.2:8466"]

    monkeypatch.setattr(remote, "service_addresses_for_tpu", addresses)
    monkeypatch.setattr(remote, "capture", lambda request, **_: SimpleNamespace(
        files=[], run="r1", elapsed_s=0.1, attempt=1))
    assert cli.main(["profile", "capture", "--tpu", "n1", "--logdir", str(tmp_path / "logs")]) == ExitCode.OK
    assert (asked["name"], asked["project"], asked["zone"]) == ("n1", "from-file", "europe-west4-a")
    monkeypatch.setenv("TPU_NAME", "from-env")
    assert cli.main(["profile", "capture", "--logdir", str(tmp_path / "logs")]) == ExitCode.OK
    assert asked["name"] == "from-env"
    monkeypatch.delenv("TPU_NAME")
    assert cli.main(["profile", "capture", "--logdir", str(tmp_path / "logs")]) == ExitCode.USAGE_ERROR
    assert "--service-addr HOST:PORT or --tpu NAME" in capsys.readouterr().err


def test_list_checks_follows_the_same_format_precedence(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpudoctor.toml").write_text('format = "json"\n')
    assert cli.main(["list-checks"]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["checks"]
    assert cli.main(["list-checks", "--format", "text"]) == ExitCode.OK
    assert not capsys.readouterr().out.lstrip().startswith("{")
