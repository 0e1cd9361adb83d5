"""Settings: resolved once (flag > environment > config file > default), frozen, and passed to a pod's workers
through one function whose output the worker's own command line reads back to the same settings."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import shlex
from pathlib import Path

import pytest
from paths import REPO, TESTS

from tpudoctor.cli import build_parser, main, settings_from_argv
from tpudoctor.commands import check_cmd
from tpudoctor.errors import UsageError
from tpudoctor.gcp import session as gcp_session
from tpudoctor.settings import ENV_FOR_SETTING, Settings, flag_for, to_argv
from tpudoctor.triage import remote_command

AWKWARD_PATHS = [
    "gs://my-bucket/train data/part 1",  # a space
    "-starts-with-a-dash",  # would be read as a flag
    "--data",  # a flag's own name
    "a=b=c",  # the separator of --flag=value
    "gs://bucket/{worker}/ckpt",
    "'single' \"double\" $(rm -rf ~) `x` ; | &",  # the worker's shell must see one word
    "données/日本語/ℤ",
    "tab\there",
    "line\nbreak",
    "",  # an empty path is still a value given
]
AWKWARD_SECONDS = [0.1, 1e-05, 90.0, 3601.25, 1234567.5, 1e20, 0.0, 1 / 3]


def _check_settings(**flags) -> Settings:
    return Settings.resolve(flags, check_cmd.SETTINGS, environ={}, config={})


def _comparable(settings: Settings) -> Settings:
    """Where each value came from changes on the way (all are flags on the worker); the values may not."""
    return dataclasses.replace(settings, sources=(), endpoints=None)


def _round_trip(settings: Settings, command: tuple[str, ...] = ("check",)) -> Settings:
    argv = shlex.split(shlex.join([*command, *to_argv(settings)]))  # through the worker's shell too
    return settings_from_argv(argv)


@pytest.mark.parametrize("path", AWKWARD_PATHS)
def test_awkward_paths_come_back_as_they_went(path):
    settings = _check_settings(data=[path, "gs://b/second"], checkpoint_dir=[path], log_dir=[path], log_file=[path])
    back = _round_trip(settings)
    assert back.data == (path, "gs://b/second") and back.log_file == (path,)
    assert _comparable(back) == _comparable(settings)


@pytest.mark.parametrize("seconds", AWKWARD_SECONDS)
def test_durations_come_back_exactly(seconds):
    settings = _check_settings(since=seconds, timeout=seconds, api_timeout=seconds, reference_timeout=seconds)
    back = _round_trip(settings)
    assert (back.since_s, back.timeout_s, back.api_timeout_s, back.reference_timeout_s) == (seconds,) * 4
    assert _comparable(back) == _comparable(settings)


def test_every_field_of_check_round_trips_and_every_key_is_passed():
    settings = Settings.resolve(
        {"project": "example.com:my-project", "worker": "15", "data": ["gs://d/1", "gs://d/2"], "since": "2d",
         "fail_on": "warn", "disable_plugins": ["acme, beta-rules", "-odd-dist:rules", "acme"]},
        check_cmd.SETTINGS,
        environ={"CLOUDSDK_COMPUTE_ZONE": "us-central2-b", "TPUDOCTOR_FORMAT": "JUNIT "},
        config={"tpu": "my-pod", "log_dir": "gs://logs/run", "timeout": 45, "api_timeout": "1m"},
    )
    assert settings == dataclasses.replace(settings)  # frozen and comparable
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.project = "other"  # type: ignore[misc]
    back = _round_trip(settings)
    assert _comparable(back) == _comparable(settings)
    assert back.format == "junit" and back.timeout_s == 45.0 and back.api_timeout_s == 60.0
    assert back.disable_plugins == ("acme", "beta-rules", "-odd-dist:rules")  # split, each once, in order
    passed = {arg.split("=", 1)[0] for arg in to_argv(settings)}
    assert passed == {flag_for(key) for key in check_cmd.SETTINGS} - {"--checkpoint-dir", "--log-file"}  # empty lists
    assert "--disable-plugin" in passed
    assert {field.name for field in dataclasses.fields(Settings)} - {"keys", "sources", "endpoints", "cluster"} == {
        key + "_s" if key in ("since", "timeout", "api_timeout", "reference_timeout") else key
        for key in check_cmd.SETTINGS}


def test_the_cluster_round_trips_too():
    from tpudoctor.commands.profile_cmd import ANALYZE_SETTINGS

    settings = Settings.resolve({}, ANALYZE_SETTINGS, environ={"TPUDOCTOR_CLUSTER": "tcp://[::1]:8786"},
                                config={"format": "html"})
    back = _round_trip(settings, ("profile", "analyze", "run.xplane.pb"))
    assert (back.cluster, back.format) == ("tcp://[::1]:8786", "html")
    assert _comparable(back) == _comparable(settings)


def test_plugins_to_leave_out_flag_then_environment_then_config():
    spec = {"disable_plugins": None}
    environ = {"TPUDOCTOR_DISABLE_PLUGINS": " env-a ,, env-b"}
    config = {"disable_plugins": ["cfg-a", "cfg-b,cfg-c"]}
    flags = {"disable_plugins": ["flag-a,flag-b", "flag-c"]}
    resolved = Settings.resolve(flags, spec, environ=environ, config=config)
    assert (resolved.disable_plugins, resolved.origin("disable_plugins")) == (("flag-a", "flag-b", "flag-c"),
                                                                              "--disable-plugin")
    resolved = Settings.resolve({}, spec, environ=environ, config=config)
    assert (resolved.disable_plugins, resolved.source("disable_plugins")) == (("env-a", "env-b"),
                                                                              "TPUDOCTOR_DISABLE_PLUGINS")
    assert Settings.resolve({}, spec, environ={}, config=config).disable_plugins == ("cfg-a", "cfg-b", "cfg-c")
    assert Settings.resolve({}, spec, environ={}, config={"disable_plugins": "one"}).disable_plugins == ("one",)
    assert Settings.resolve({}, spec, environ={}, config={}).disable_plugins == ()
    with pytest.raises(UsageError, match="disable_plugins from the config file must be a list of plugin names"):
        Settings.resolve({}, spec, environ={}, config={"disable_plugins": [3]})


def test_the_flag_is_repeatable_and_each_plugin_loading_command_takes_it():
    parser = build_parser()
    for argv in (["check"], ["list-checks"], ["explain", "NODE-001"], ["profile", "analyze", "x.xplane.pb"],
                 ["compare", "a.json", "b.json"], ["hang"], ["goodput", "train.log"], ["merge", "reports/"]):
        args = parser.parse_args([*argv, "--disable-plugin", "acme", "--disable-plugin=b,c"])
        assert args.settings_spec["disable_plugins"] is None, argv
        resolved = Settings.resolve(args, args.settings_spec, environ={}, config={})
        assert resolved.disable_plugins == ("acme", "b", "c"), argv


def test_every_command_that_writes_a_report_can_redact_it():
    parser = build_parser()
    for argv in (["check"], ["merge", "reports/"], ["profile", "analyze", "x.xplane.pb"], ["compare", "a.json", "b.json"],
                 ["hang"], ["goodput", "train.log"]):
        assert parser.parse_args([*argv, "--redact"]).redact is True, argv
        assert parser.parse_args(argv).redact is False, argv


def test_the_hang_fanout_passes_the_plugins_left_out_to_each_worker():
    from tpudoctor.hang.product import worker_argv as hang_worker_argv

    args = build_parser().parse_args(["hang", "--tpu", "pod", "--all-workers", "--disable-plugin", "acme,-odd"])
    settings = Settings.resolve(args, args.settings_spec, environ={}, config={})
    argv = shlex.split(shlex.join(hang_worker_argv(args, settings, worker="3")))
    worker = build_parser().parse_args(argv[1:])
    assert Settings.resolve(worker, worker.settings_spec, environ={}, config={}).disable_plugins == ("acme", "-odd")


def test_precedence_flag_then_environment_then_config_then_default():
    spec = {"project": None, "zone": None, "tpu": None, "worker": None, "since": "1h", "format": "text"}
    environ = {"CLOUDSDK_CORE_PROJECT": "env-project", "CLOUDSDK_COMPUTE_ZONE": "env-zone", "TPUDOCTOR_FORMAT": ""}
    config = {"project": "config-project", "zone": "config-zone", "tpu": "config-tpu", "since": "2h"}
    settings = Settings.resolve({"project": "flag-project", "since": None}, spec, environ=environ, config=config)
    assert (settings.project, settings.zone, settings.tpu, settings.worker) == (
        "flag-project", "env-zone", "config-tpu", None)
    assert settings.since_s == 7200.0 and settings.format == "text"
    assert dict(settings.sources) == {"project": "flag", "zone": "CLOUDSDK_COMPUTE_ZONE", "tpu": "config",
                                      "worker": "default", "since": "config", "format": "default"}
    assert [settings.origin(k) for k in ("project", "zone", "tpu")] == [
        "--project", "CLOUDSDK_COMPUTE_ZONE", "the config file"]
    # an explicit flag equal to the default still wins
    assert Settings.resolve({"since": "1h"}, spec, environ={}, config=config).since_s == 3600.0


def test_a_bad_value_is_a_usage_error_naming_where_it_came_from():
    with pytest.raises(UsageError, match=r"TPU name 'My_TPU' \(from TPU_NAME\)"):
        Settings.resolve({}, check_cmd.SETTINGS, environ={"TPU_NAME": "My_TPU"}, config={})
    with pytest.raises(UsageError, match="not a duration: 'soon'"):
        Settings.resolve({}, check_cmd.SETTINGS, environ={}, config={"since": "soon"})
    with pytest.raises(UsageError, match="fail_on = 'error' in the config file"):
        Settings.resolve({}, check_cmd.SETTINGS, environ={}, config={"fail_on": "error"})
    with pytest.raises(UsageError, match="cluster must be a scheduler address string"):
        Settings.resolve({}, {"cluster": None}, environ={}, config={"cluster": 8786})


def test_endpoints_are_read_with_the_settings():
    settings = Settings.resolve({}, {"format": "text"}, environ={
        gcp_session.TPU_ENDPOINT_ENV: "http://127.0.0.1:9", "GCE_METADATA_HOST": "127.0.0.1:8"}, config={})
    assert settings.endpoints.tpu == "http://127.0.0.1:9"
    assert settings.endpoints.metadata_host == "127.0.0.1:8" and settings.endpoints.metadata_overridden


def test_the_worker_command_line_carries_the_settings_resolved_here(tmp_path, monkeypatch):
    """The worker has neither our config file nor our environment: what it parses is what we resolved."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpudoctor.toml").write_text('data = ["gs://b/train set", "-odd"]\nsince = "2h"\n'
                                             'reference_timeout = 90\n', encoding="utf-8")
    monkeypatch.setenv("CLOUDSDK_COMPUTE_ZONE", "us-central2-b")
    monkeypatch.setenv("TPUDOCTOR_DISABLE_PLUGINS", "acme,beta-rules")
    for var in ("CLOUDSDK_CORE_PROJECT", "TPU_NAME", "TPUDOCTOR_WORKER", "TPUDOCTOR_FORMAT"):
        monkeypatch.delenv(var, raising=False)
    args = build_parser().parse_args(["check", "--tpu", "pod", "--project", "p", "--all-workers", "--step", "2",
                                      "--step", "5", "--redact", "NODE-001", "GCS-001"])
    from tpudoctor.cli import _settings_for

    settings = _settings_for(args)
    line = remote_command(args, settings, worker="7", timeout_s=112.5)
    argv = shlex.split(line)
    assert argv[:2] == ["tpudoctor", "check"]
    worker = settings_from_argv(argv[1:])
    expected = settings.replace(format="json", timeout_s=112.5, worker="7")
    assert _comparable(worker) == _comparable(expected)
    assert worker.data == ("gs://b/train set", "-odd") and worker.since_s == 7200.0
    assert worker.disable_plugins == ("acme", "beta-rules")  # from our environment, on the worker's command line
    parsed = build_parser().parse_args(argv[1:])
    assert parsed.step == [2, 5] and parsed.redact and parsed.exit_zero and parsed.ids == ["NODE-001", "GCS-001"]


def test_a_command_that_takes_no_setting_reads_no_config_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpudoctor.toml").write_text("this is not toml", encoding="utf-8")
    assert main(["list-signatures"]) == 0
    assert main(["list-checks"]) == 2
    assert "cannot read config file" in capsys.readouterr().err


def test_each_command_declares_known_settings():
    parser = build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    seen = 0
    for name, sub in subcommands.choices.items():
        nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        for command in ([sub] if not nested else list(nested[0].choices.values())):
            spec = command.get_default("settings_spec") or {}
            seen += bool(spec)
            for key in spec:  # each key a flag of the command: no setting the user cannot give on the line
                assert any(a.dest == key for a in command._actions), (name, key)
    assert seen >= 8


# --- only the settings read the environment variables that are settings ---------------------------------------
SETTING_VARIABLES = {var for names in ENV_FOR_SETTING.values() for var in names} | {
    gcp_session.TPU_ENDPOINT_ENV, gcp_session.STORAGE_ENDPOINT_ENV, gcp_session.LOGGING_ENDPOINT_ENV,
    gcp_session.MONITORING_ENDPOINT_ENV, *gcp_session.METADATA_HOST_ENV, "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG"}
SETTING_CONSTANTS = {"ENV_FOR_SETTING", "FORMAT_ENV", "TPU_ENDPOINT_ENV", "STORAGE_ENDPOINT_ENV",
                     "LOGGING_ENDPOINT_ENV", "MONITORING_ENDPOINT_ENV", "METADATA_HOST_ENV", "ENDPOINT_VARIABLES",
                     "DISABLE_ENV"}
ALLOWED = {
    "tpudoctor/settings.py": "resolves the settings",
    "tpudoctor/formats.py": "names TPUDOCTOR_FORMAT",
    "tpudoctor/plugins.py": "names TPUDOCTOR_DISABLE_PLUGINS for the fix a broken plugin's entry shows; reads no "
                            "environment (test_the_plugin_registry_reads_no_environment)",
    "tpudoctor/gcp/session.py": "Endpoints.from_environ: the one reader of the endpoint variables (for settings, "
                                "and for a worker process's own session)",
    "tpudoctor/gcp/credentials.py": "where Application Default Credentials live, for Endpoints",
    "tpudoctor/profile/executor.py": "passes the process's variables on to its child processes",
    "tpudoctor/providers/runtime_env.py": "records the TPU runtime's own variables as a fact (TPU_NAME is libtpu's)",
    "tpudoctor/cloud_knowledge/gcloud.py": "TPU_NAME as a placeholder in a printed command",
    "reference_models/device.py": "TensorFlow's TPUClusterResolver in the reference run reads TPU_NAME itself",
}


def _mentions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in SETTING_VARIABLES:
            found.add(node.value)
        elif isinstance(node, ast.Name) and node.id in SETTING_CONSTANTS:
            found.add(node.id)
        elif isinstance(node, ast.alias) and node.name in SETTING_CONSTANTS:
            found.add(node.name)
    return found


def test_only_the_settings_read_the_setting_variables():
    offenders = {}
    for folder in ("tpudoctor", "checks", "reports", "reference_models"):
        for path in sorted((REPO / folder).rglob("*.py")):
            name = path.relative_to(REPO).as_posix()
            if name.startswith("tpudoctor/testing/") or name in ALLOWED:
                continue  # the loopback fakes set these variables for the processes they start
            found = _mentions(path)
            if found:
                offenders[name] = sorted(found)
    assert offenders == {}, "read settings through tpudoctor.settings.Settings, not the environment"


def _reads_environment(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any((isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"))
               or (isinstance(node, ast.Name) and node.id in ("environ", "getenv"))
               or (isinstance(node, ast.alias) and node.name in ("environ", "getenv"))
               for node in ast.walk(tree))


def test_the_plugin_registry_reads_no_environment(tmp_path):
    """Which plugins are left out is the ``disable_plugins`` setting, handed to every loader by the command."""
    assert ENV_FOR_SETTING["disable_plugins"] == ("TPUDOCTOR_DISABLE_PLUGINS",)
    for name in ("tpudoctor/plugins.py", "tpudoctor/families.py"):
        assert not _reads_environment(REPO / name), name
    crossing = tmp_path / "crossing.py"
    crossing.write_text("import os\nnames = os.environ.get(DISABLE_ENV, '')\n", encoding="utf-8")
    assert _reads_environment(crossing)


def test_the_rule_breaks_when_crossed(tmp_path):
    crossing = tmp_path / "crossing.py"
    crossing.write_text('import os\nzone = os.environ.get("CLOUDSDK_COMPUTE_ZONE")\n'
                        "from tpudoctor.formats import FORMAT_ENV\n", encoding="utf-8")
    assert _mentions(crossing) == {"CLOUDSDK_COMPUTE_ZONE", "FORMAT_ENV"}


def test_a_provider_importing_the_settings_breaks_a_contract(tmp_path):
    from test_import_contracts import IMPORT_LINTER_MISSING, installed_layout, lint_imports

    if IMPORT_LINTER_MISSING:
        pytest.skip("import-linter is not installed")
    root = installed_layout(tmp_path)
    (root / "tpudoctor" / "providers" / "own_settings.py").write_text("from tpudoctor.settings import Settings\n")
    done = lint_imports(root)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "tpudoctor.providers.own_settings -> tpudoctor.settings" in output, output


# --- the target and the worker's environment are facts, gathered once, never written back -----------------------
def test_the_worker_environment_is_read_from_facts_not_from_the_process(monkeypatch):
    from tpudoctor.findings import Target
    from tpudoctor.providers.report_environment import worker_environment
    from tpudoctor.providers.worker_env import WORKER_ENV_FACT, read_worker_env

    monkeypatch.setenv("TPU_WORKER_ID", "9")  # the process's own: only the provider reads it
    facts = {WORKER_ENV_FACT: read_worker_env({"TPU_WORKER_ID": "4", "TPU_WORKER_HOSTNAMES": "pod-0, pod-1,,"}),
             "packages.installed": {"jax": "0.4.35"}}
    assert facts[WORKER_ENV_FACT] == {"worker_id": "4", "worker_hostnames": ["pod-0", " pod-1"]}
    found = worker_environment(facts, Target())
    assert (found["worker"], found["slice_workers"], found["packages"]) == ("4", 2, {"jax": "0.4.35"})
    assert worker_environment(facts, Target(worker="2"))["worker"] == "2"  # --worker / TPUDOCTOR_WORKER first
    assert worker_environment({"packages.installed": {}}, Target())["worker"] is None


def test_an_unknown_format_in_the_environment_is_refused_as_in_the_config_file(tmp_path, monkeypatch, capsys):
    """The hostile probe (2026-12-04, N29): TPUDOCTOR_FORMAT=bogus was ignored silently, while the same value in
    tpudoctor.toml is refused."""
    log = TESTS / "fixtures" / "goodput" / "maxtext_restart.log"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TPUDOCTOR_FORMAT", "bogus")
    assert main(["goodput", str(log)]) == 2
    assert "TPUDOCTOR_FORMAT='bogus' is not a report format" in capsys.readouterr().err
    monkeypatch.setenv("TPUDOCTOR_FORMAT", "JSON")  # a known format, in any case, still works
    assert main(["goodput", str(log), "-o", str(tmp_path / "g.json")]) == 0
    assert (tmp_path / "g.json").read_text().lstrip().startswith("{")
    monkeypatch.delenv("TPUDOCTOR_FORMAT")
    (tmp_path / "tpudoctor.toml").write_text('format = "bogus"\n')
    assert main(["goodput", str(log)]) == 2


@pytest.mark.parametrize(("flag_or_env", "said"), [("--cluster", "--cluster 'bogus'"),
                                                   ("TPUDOCTOR_CLUSTER", "TPUDOCTOR_CLUSTER 'bogus'")])
def test_a_cluster_address_without_a_port_names_where_it_came_from(flag_or_env, said):
    args = {"cluster": "bogus"} if flag_or_env == "--cluster" else {}
    environ = {"TPUDOCTOR_CLUSTER": "bogus"} if flag_or_env != "--cluster" else {}
    with pytest.raises(UsageError) as raised:
        Settings.resolve(args, {"cluster": None}, environ=environ)
    assert said in raised.value.message
    for good in ("tcp://10.0.0.2:8786", "10.0.0.2:8786", "tls://[::1]:8786"):
        assert Settings.resolve({"cluster": good}, {"cluster": None}, environ={}).cluster == good
