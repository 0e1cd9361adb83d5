"""Built-in discovery, third-party entry points and load-time validation."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tpudoctor.check import Check
from tpudoctor.families import RegistryError, load_registry
from tpudoctor.findings import Step
from tpudoctor.testing import conformance_problems


def write_plugin(root: Path, check_id: str = "ACME-001", status_call: str = "self.fail('quota exhausted', remediation=remediation('Ask for quota.', 'gcloud alpha services quota list'))") -> Path:
    """A real installed-looking distribution: a module plus dist-info with an entry point."""
    pkg = root / "acme_tpu_checks.py"
    pkg.write_text(textwrap.dedent(f'''
        from tpudoctor.check import Check, Example, remediation
        from tpudoctor.findings import Status, Step
        from tpudoctor.provider import FactProvider

        class AcmeQuotaFacts(FactProvider):
            name = "acme.quota"
            provides = ("acme.quota_left",)
            def gather(self, ctx, facts):
                return {{"acme.quota_left": 0}}

        class AcmeQuota(Check):
            """Acme's TPU quota is not exhausted."""
            id = "{check_id}"
            title = "Acme quota left"
            step = Step.NODE
            facts = ("acme.quota_left",)
            docs = "https://acme.example/quota"
            examples = (Example("left", {{"acme.quota_left": 3}}, Status.PASS),
                        Example("none", {{"acme.quota_left": 0}}, Status.FAIL))
            def evaluate(self, facts):
                if facts.require("acme.quota_left") > 0:
                    return self.passed("quota left")
                return {status_call}
    '''))
    dist = root / "acme_tpu_checks-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-tpu-checks\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[tpudoctor.checks]\nacme = acme_tpu_checks\n")
    return root


def test_builtin_checks_are_found_and_ordered_by_step():
    registry = load_registry(plugins=False)
    classes = registry.check_classes()
    assert "RUNTIME-001" in registry.checks
    assert [int(c.step) for c in classes] == sorted(int(c.step) for c in classes)
    assert registry.provider_for("python.version") is not None


def test_every_registered_check_conforms():
    registry = load_registry()
    known = set(registry.providers)
    problems = [p for cls in registry.check_classes() for p in conformance_problems(cls, known)]
    assert problems == []


def test_conformance_catches_a_check_that_cannot_fail():
    class AlwaysFine(Check):
        """Never fails."""

        id = "BAD-001"
        title = "always fine"
        step = Step.NODE
        facts = ("python.version",)
        docs = "https://example.invalid"

        def evaluate(self, facts):
            return self.passed("fine")

    problems = conformance_problems(AlwaysFine)
    assert any("PASS example" in p for p in problems)
    assert any("cannot fail" in p for p in problems)


def test_duplicate_check_ids_are_an_error_at_load_time():
    class Twin(Check):
        """Same id as a built-in."""

        id = "RUNTIME-001"
        title = "twin"
        step = Step.RUNTIME

    with pytest.raises(RegistryError, match="duplicate check id RUNTIME-001"):
        load_registry([("test", [Twin])], plugins=False)


def test_invalid_check_id_is_an_error():
    class Bad(Check):
        """Bad id."""

        id = "lowercase-1"
        title = "bad"
        step = Step.NODE

    with pytest.raises(RegistryError, match="invalid id"):
        load_registry([("test", [Bad])], plugins=False)


def run_cli(*args: str, plugin_dir: Path | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = None
    if plugin_dir is not None:
        import os

        env = dict(os.environ, PYTHONPATH=str(plugin_dir))
    return subprocess.run([sys.executable, "-m", "tpudoctor", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def test_entry_point_plugin_is_listed_and_its_failure_sets_exit_1(tmp_path):
    plugin = write_plugin(tmp_path)
    listed = run_cli("list-checks", "--format", "json", plugin_dir=plugin)
    assert listed.returncode == 0, listed.stderr
    assert '"ACME-001"' in listed.stdout and "acme-tpu-checks:acme" in listed.stdout
    checked = run_cli("check", "ACME-001", "--format", "json", plugin_dir=plugin, cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr
    assert '"root_cause": "ACME-001"' in checked.stdout


def test_plugin_that_duplicates_a_builtin_id_is_refused_with_exit_3(tmp_path):
    plugin = write_plugin(tmp_path, check_id="RUNTIME-001")
    result = run_cli("list-checks", plugin_dir=plugin)
    assert result.returncode == 3
    assert "duplicate check id RUNTIME-001" in result.stderr
    assert "Traceback" not in result.stderr
