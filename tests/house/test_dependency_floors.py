"""The lowest NumPy and pandas that pyproject.toml declares really load and analyse a capture.

The floor releases are installed into a scratch ``--target`` folder and put first on
``sys.path`` of a subprocess that runs ``tpudoctor profile analyze`` on a real fixture capture.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from packaging.requirements import Requirement
from paths import REPO as ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CAPTURE = ROOT / "tests" / "fixtures" / "profiles" / "jax_steady" / "localhost.xplane.pb"
FLOORED = ("numpy", "pandas")  # compiled against each other: tested together


def declared_floors() -> dict[str, str]:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = {}
    for line in dependencies:
        requirement = Requirement(line)
        for spec in requirement.specifier:
            if spec.operator == ">=" and requirement.name in FLOORED:
                floors[requirement.name] = spec.version
    return floors


def floor_release_series(version: str) -> str:
    """``>=2.2.2`` -> ``>=2.2.2,<2.3``: the floor itself or its bug-fix releases, nothing newer."""
    major, minor = (version.split(".") + ["0"])[:2]
    return f">={version},<{major}.{int(minor) + 1}"


def test_floors_are_declared_for_the_libraries_the_loader_needs():
    floors = declared_floors()
    assert set(floors) == set(FLOORED)
    assert int(floors["numpy"].split(".")[0]) >= 2  # the loader calls np.bitwise_count (NumPy 2.0+)


@pytest.mark.slow
def test_profile_analyze_works_with_the_lowest_declared_numpy_and_pandas(tmp_path):
    floors = declared_floors()
    target = tmp_path / "floor"
    wanted = [f"{name}{floor_release_series(version)}" for name, version in sorted(floors.items())]
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--only-binary=:all:",
         "--target", str(target), *wanted],
        capture_output=True, text=True, timeout=300,
    )
    if install.returncode != 0:
        pytest.skip(f"cannot install the declared floors {', '.join(wanted)} (package index unreachable or "
                    f"without them): {install.stderr.strip().splitlines()[-1:]}")
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(target)!r})\n"
        "import numpy, pandas\n"
        "from tpudoctor.cli import main\n"
        f"code = main(['profile', 'analyze', {str(CAPTURE)!r}, '--format', 'json', '-o', {str(tmp_path / 'r.json')!r}])\n"
        "print(json.dumps({'numpy': numpy.__version__, 'pandas': pandas.__version__, 'code': code}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    for name, version in floors.items():
        assert Requirement(f"{name}{floor_release_series(version)}").specifier.contains(seen[name]), seen
    assert seen["code"] == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["hosts"], "the floor NumPy loaded no host"
