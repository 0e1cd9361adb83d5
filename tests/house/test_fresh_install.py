"""Must-show of the foundation: a wheel installed in a fresh venv runs ``tpudoctor check`` here.

The dependencies come from the running environment through a .pth file, so the test needs
no network; what it proves is that the built wheel carries the mapped packages, the schema and
the console script, and that every check that cannot apply on a plain machine SKIPs with a reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from paths import REPO

from tpudoctor.schema import validate


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fresh")
    wheel_dir = root / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheel_dir), str(REPO)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    wheel = next(wheel_dir.glob("tpudoctor-*.whl"))
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    (site / "deps_from_test_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    if install.returncode != 0 and "no such option: --python" in install.stderr:
        install = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(site), str(wheel)],
            capture_output=True, text=True, timeout=300,
        )
    assert install.returncode == 0, install.stderr
    return env_dir


@pytest.mark.slow
def test_fresh_install_checks_this_machine_with_a_valid_report(fresh_venv, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDSDK_", "TPU_", "TPUDOCTOR_"))}
    result = subprocess.run(
        [sys.executable if not (fresh_venv / "bin" / "tpudoctor").exists() else str(fresh_venv / "bin" / "tpudoctor"),
         "check", "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    validate(doc, "check_report")
    installed_from = subprocess.check_output(
        [str(fresh_venv / "bin" / "python"), "-c", "import tpudoctor.checks as c; print(c.__file__)"], text=True, cwd=tmp_path)
    assert str(fresh_venv) in installed_from, installed_from
    by_step = {r["step"] for r in doc["results"]}
    assert by_step == {1, 2, 3, 4, 5}
    for r in doc["results"]:
        if r["status"] == "SKIP":
            assert r["skip_reason"] and len(r["skip_reason"]) > 10, r
    # No TPU and no cloud here: nothing about the node or the buckets may claim a failure.
    assert all(r["status"] == "SKIP" for r in doc["results"] if r["step"] in (1, 2)), doc["results"]
