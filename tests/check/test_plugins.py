"""The one plugin registry with real entry points: a broken plugin of each family (checks, profile, hang and
goodput rules) is an ERROR entry naming it and the run goes on; leaving it out by name removes the entry.

Each plugin is a real distribution (a module plus ``*.dist-info/entry_points.txt``) in a temporary folder put on
the path, as ``pip install --target`` would leave it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from paths import REPO as REPO_ROOT

from tpudoctor.families import load_registry
from tpudoctor.findings import Status
from tpudoctor.plugins import DISABLE_ENV

IMPORT_ERROR = "raise ImportError(\"No module named 'acme_internal_sdk'\")\n"


@pytest.fixture(autouse=True)
def _plugin_modules_forgotten():
    """A plugin module imported here leaves sys.modules afterwards: another test may install one of the same
    name from another folder (tests/profile/test_profile_rules.py's acme_profile_rules)."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("acme"):
            del sys.modules[name]


def install_plugin(root: Path, *, dist: str, group: str, entry_point: str, module: str, source: str,
                   attr: str = "") -> Path:
    """A distribution ``dist`` whose entry point ``entry_point`` in ``group`` names ``module[:attr]``."""
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry_point} = {module}{':' + attr if attr else ''}\n")
    return root


def test_a_check_plugin_that_fails_to_import_is_an_error_check_naming_it(tmp_path, monkeypatch):
    install_plugin(tmp_path, dist="acme-tpu-checks", group="tpudoctor.checks", entry_point="acme",
                   module="acme_tpu_checks", source=IMPORT_ERROR)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = load_registry(disabled=())
    [check] = registry.plugin_problem_checks()
    assert check.id == "PLUGIN-001" and check.source == "acme-tpu-checks:acme"
    result = check().evaluate({})
    assert result.status is Status.ERROR
    assert "check plugin 'acme' (acme-tpu-checks:acme) could not be loaded" in result.message
    assert "No module named 'acme_internal_sdk'" in result.message
    assert f"{DISABLE_ENV}=acme" in result.remediation.commands[0]
    assert "--disable-plugin acme" in result.remediation.text and f"{DISABLE_ENV}=acme" in result.remediation.text
    assert "RUNTIME-001" in registry.checks  # the built-ins are all there
    for name in ("acme", "acme-tpu-checks", "acme-tpu-checks:acme"):  # the entry point, its package, or both
        assert load_registry(disabled={name}).plugin_problem_checks() == []


def test_a_rule_plugin_that_fails_to_construct_is_an_error_rule(tmp_path, monkeypatch):
    from tpudoctor.families import load_rules

    install_plugin(tmp_path, dist="acme-profile-rules", group="tpudoctor.profile_rules", entry_point="acme_rules",
                   module="acme_profile_rules", attr="rules",
                   source="def rules():\n    raise RuntimeError('acme licence server unreachable')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    rules = load_rules("profile-rules", disabled=())
    placeholder = rules["plugin-acme-rules"]
    assert placeholder.source == "acme-profile-rules:acme_rules"
    finding = placeholder().evaluate(None)
    assert finding.status is Status.ERROR and "acme licence server unreachable" in finding.message
    assert "input-bound" in rules
    assert "plugin-acme-rules" not in load_rules("profile-rules", disabled={"acme_rules"})


def run_cli(args: tuple[str, ...], plugin_dir: Path, *, cwd: Path = REPO_ROOT, **env: str
            ) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != DISABLE_ENV}
    environ.update(PYTHONPATH=str(plugin_dir), **env)
    return subprocess.run([sys.executable, "-m", "tpudoctor", *args], capture_output=True, text=True, env=environ,
                          cwd=cwd, timeout=300)


def _in_repo(path: str) -> str:
    return str(REPO_ROOT / path)


# (family, entry-point group, the command, how the plugin is broken, where the entry is in the JSON, its id)
FAMILIES = [
    ("checks", "tpudoctor.checks", ("check", "--step", "4", "--log-file",
                                     _in_repo("tests/data/logs/multi_warn_then_oom_then_followon.log")),
     IMPORT_ERROR, "", "PLUGIN-001"),
    ("profile", "tpudoctor.profile_rules", ("profile", "analyze", _in_repo("tests/fixtures/profiles/jax_steady")),
     "def rules():\n    raise RuntimeError('acme licence server unreachable')\n", "rules", "plugin-acme"),
    ("hang", "tpudoctor.hang_rules", ("hang", "--replay", _in_repo("tests/data/hang/device_step")),
     "rules = ['not a rule class']\n", "rules", "plugin-acme"),
    ("goodput", "tpudoctor.goodput_rules", ("goodput", _in_repo("tests/fixtures/goodput/maxtext_restart.log")),
     IMPORT_ERROR, "", "plugin-acme"),
]


def _finding_ids(document: dict) -> list[str]:
    """Every finding id anywhere in a JSON report (check results, profile hosts' results, hang/goodput findings)."""
    found = []
    if isinstance(document, dict):
        if "id" in document and "status" in document:
            found.append(document["id"])
        for value in document.values():
            found += _finding_ids(value)
    elif isinstance(document, list):
        for value in document:
            found += _finding_ids(value)
    return found


@pytest.mark.slow
@pytest.mark.parametrize(("family", "group", "argv", "broken", "attr", "entry_id"), FAMILIES,
                         ids=[f[0] for f in FAMILIES])
def test_a_broken_plugin_is_named_and_the_run_goes_on_and_disabling_it_removes_it(
        tmp_path, family, group, argv, broken, attr, entry_id):
    plugins = tmp_path / "site"
    plugins.mkdir()
    install_plugin(plugins, dist="acme-tpudoctor-plugins", group=group, entry_point="acme",
                   module="acme_tpudoctor_plugins", source=broken, attr=attr)
    shown = run_cli((*argv, "--format", "json"), plugins)
    assert shown.returncode in (0, 1), shown.stderr
    assert "Traceback" not in shown.stderr
    document = json.loads(shown.stdout)
    ids = _finding_ids(document)
    assert entry_id in ids
    assert "could not be loaded and was left out" in shown.stdout and "acme-tpudoctor-plugins:acme" in shown.stdout
    assert "--disable-plugin acme" in shown.stdout  # the fix names the flag
    assert len(ids) > 1  # the rest of the run is there

    project = tmp_path / "project"  # a working directory whose tpudoctor.toml leaves the plugin out
    project.mkdir()
    (project / "tpudoctor.toml").write_text('disable_plugins = ["acme-tpudoctor-plugins"]\n', encoding="utf-8")
    ways = {"--disable-plugin": run_cli((*argv, "--format", "json", "--disable-plugin", "other,acme"), plugins),
            DISABLE_ENV: run_cli((*argv, "--format", "json"), plugins, **{DISABLE_ENV: "acme"}),
            "tpudoctor.toml": run_cli((*argv, "--format", "json"), plugins, cwd=project)}
    for way, left_out in ways.items():
        assert left_out.returncode in (0, 1), (way, left_out.stderr)
        without = _finding_ids(json.loads(left_out.stdout))
        assert entry_id not in without and "acme-tpudoctor-plugins" not in left_out.stdout, way
        assert sorted(without) == sorted(i for i in ids if i != entry_id), way


@pytest.mark.slow
def test_a_process_pool_analysis_leaves_the_plugin_out_and_only_the_combining_process_loads_rules(
        tmp_path, monkeypatch):
    """The per-host map runs in worker processes that never load rules; the combine loads them with the
    names it was handed, not with whatever the environment says."""
    from tpudoctor.captures.capture_files import resolve
    from tpudoctor.profile import executor
    from tpudoctor.profile.pipeline import analyze

    marker = tmp_path / "imported-by"
    site = tmp_path / "site"
    site.mkdir()
    install_plugin(site, dist="acme-pool-rules", group="tpudoctor.profile_rules", entry_point="acme",
                   module="acme_pool_rules",
                   source=f"import os\nwith open({str(marker)!r}, 'a') as f:\n    f.write(f'{{os.getpid()}}\\n')\n"
                          + IMPORT_ERROR)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(executor, "IN_PROCESS_MAX_BYTES", 0)  # the fixture's small hosts go to the pool too
    capture = REPO_ROOT / "tests" / "fixtures" / "profiles" / "multihost_balanced"
    assert isinstance(executor.executor_for(resolve(str(capture)).hosts, max_workers=2), executor.LocalProcesses)

    monkeypatch.delenv(DISABLE_ENV, raising=False)
    left_out = analyze(str(capture), max_workers=2, disabled_plugins=("acme",))
    assert len(left_out.hosts) >= 2 and not left_out.failed_hosts
    assert "plugin-acme" not in left_out.rules and not marker.exists()  # no process imported it

    monkeypatch.setenv(DISABLE_ENV, "acme")  # the library reads no environment: the caller says what to leave out
    shown = analyze(str(capture), max_workers=2)
    assert "plugin-acme" in shown.rules
    assert marker.read_text().split() == [str(os.getpid())]  # the combine here, no worker process
    assert left_out.verdicts == shown.verdicts


def test_a_plugin_with_a_bad_id_stops_the_load_with_a_hint_naming_the_flag(tmp_path, monkeypatch):
    from tpudoctor.plugins import RegistryError

    install_plugin(tmp_path, dist="acme-tpu-checks", group="tpudoctor.checks", entry_point="acme",
                   module="acme_bad_id_checks",
                   source="from tpudoctor.check import Check\n\nclass AcmeCheck(Check):\n    id = 'not an id'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RegistryError, match="has invalid id 'not an id'") as raised:
        load_registry()
    assert raised.value.hint == (f"leave the plugin out with --disable-plugin acme (or {DISABLE_ENV}=acme), "
                                 "or fix or uninstall it")
    assert "AcmeCheck" not in {c.__name__ for c in load_registry(disabled=("acme",)).checks.values()}


def test_leaving_out_a_plugin_that_is_not_installed_is_a_note_not_an_error(tmp_path, monkeypatch, capsys):
    """The hostile probe (2026-12-04, N29): ``--disable-plugin nosuch`` passed silently. One setting serves
    machines with and without a plugin, so an absent one is a note naming it, and the run goes on."""
    from tpudoctor.cli import main

    install_plugin(tmp_path, dist="acme-tpu-checks", group="tpudoctor.checks", entry_point="acme",
                   module="acme_tpu_checks", source=IMPORT_ERROR)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["list-checks", "--format", "json", "--disable-plugin", "nosuch,acme"]) == 0
    err = capsys.readouterr().err
    assert "--disable-plugin nosuch: not the name of an installed plugin" in err and "acme" not in err
    for name in ("acme", "acme-tpu-checks", "acme-tpu-checks:acme"):
        assert main(["list-checks", "--format", "json", "--disable-plugin", name]) == 0
        assert "note" not in capsys.readouterr().err
    monkeypatch.setenv(DISABLE_ENV, "typo")
    assert main(["list-checks", "--format", "json"]) == 0
    assert f"{DISABLE_ENV} typo: not the name of an installed plugin" in capsys.readouterr().err


def test_loading_a_family_scans_the_installed_distributions_once_and_parses_no_metadata_of_its_own(monkeypatch):
    """Issue 44: each scan of entry points reads every installed distribution's entry_points.txt (~280 beside
    TensorFlow and JAX), and ``Distribution.name`` parses a METADATA file: the profile rules' load did two scans
    and parsed tpudoctor's own METADATA once for each of its entry points, to tell them from a plugin's."""
    from collections import Counter
    from importlib import metadata

    from tpudoctor.families import load_rules

    reads: Counter[str] = Counter()

    def counting(read_text):
        def counted(self, filename):
            reads[filename] += 1
            if filename in ("METADATA", "PKG-INFO") and Path(str(self._path)).name.startswith("tpudoctor"):
                reads["own metadata"] += 1
            return read_text(self, filename)
        return counted

    # dask imports the importlib_metadata backport, whose finder then yields its own distributions to the stdlib's
    # scan: count the reads of both
    backport = sys.modules.get("importlib_metadata")
    for distribution in (metadata.PathDistribution, *([backport.PathDistribution] if backport else [])):
        monkeypatch.setattr(distribution, "read_text", counting(distribution.read_text))
    rules = load_rules("profile-rules")
    assert "device-bound" in rules
    distributions = len({Path(str(d._path)) for d in metadata.distributions()})
    assert 0 < reads["entry_points.txt"] <= distributions
    assert reads["own metadata"] == 0
