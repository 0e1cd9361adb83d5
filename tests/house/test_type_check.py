"""The type checker runs with the suite: mypy over tpudoctor/ and reports/ with pyproject's [tool.mypy] finds no error.

About 40 s on a cold cache on 2 cores (the cache lives in the test's temporary folder, so every run is cold and
no stale cache hides an error)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from paths import REPO

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                 reason="mypy is not installed (pip install -e '.[test]')")]


def test_mypy_finds_no_type_error_in_tpudoctor(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
                           "--cache-dir", str(tmp_path / "mypy_cache"), "--no-error-summary"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 0 and not errors, f"{len(errors)} type errors:\n" + done.stdout[-8000:] + done.stderr


def test_the_package_ships_its_types():
    """PEP 561: py.typed in the package and in the package data, so an installed tpudoctor is typed for a plugin."""
    assert (REPO / "tpudoctor" / "py.typed").is_file()
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["tpudoctor"]


def test_a_check_passes_with_a_title_of_its_own_as_every_rule_can():
    """mypy found it: ``Check.passed`` overrode ``Rule.passed`` without its ``title``, so a check that names what
    it found (``self.passed(message, title=...)``, as rules do) failed with a TypeError."""
    from tpudoctor.check import Check
    from tpudoctor.findings import Status, Step

    class Titled(Check):
        id = "TEST-001"
        title = "a check"
        step = Step.NODE

        def evaluate(self, facts):
            return self.passed("all well", title="what it found")

    result = Titled().evaluate({})
    assert result.status is Status.PASS and result.title == "what it found" and result.message == "all well"
    assert Titled().passed("all well").title == "a check"


def test_a_busier_machine_is_worded_even_where_the_run_recorded_no_share():
    """mypy found it: the bench finding multiplied this run's busy share by 100 though it is None where the
    measurement holds no machine figures (a TypeError in place of the finding)."""
    from tpudoctor.bench.findings import _busy

    assert _busy({"measurement": {}}, {"gate": {"busy_share_increase": 0.3}}) == \
        "30 points more of it than during the baseline's"
    measured = {"measurement": {"machine": {"others_cpu_share": 0.35, "steal_share": 0.03}}}
    assert _busy(measured, {"gate": {"busy_share_increase": 0.36}}) == "38% during this run vs 2% during the baseline's"
