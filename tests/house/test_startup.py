"""Start-up cost and packaging: no framework on --help, no bare top-level packages."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from paths import REPO

HEAVY = ("tensorflow", "jax", "jaxlib", "torch", "google.cloud.tpu_v2", "google.cloud.storage", "pandas", "dask",
         "distributed")


@pytest.mark.parametrize("argv", [["--help"], ["list-checks"], ["check", "--help"], ["--version"],
                                  ["explain", "socket-closed"], ["list-signatures"]])
def test_light_commands_import_no_framework(argv, tmp_path):
    probe = textwrap.dedent(f"""
        import sys
        from tpudoctor.cli import main
        try:
            main({argv!r})
        except SystemExit:
            pass
        heavy = [m for m in {HEAVY!r} if m in sys.modules]
        print("HEAVY=" + ",".join(heavy), file=sys.stderr)
    """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert "HEAVY=\n" in result.stderr or result.stderr.rstrip().endswith("HEAVY="), result.stderr


def test_bare_top_level_packages_do_not_exist(tmp_path):
    for name in ("checks", "reports", "reference_models"):
        result = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True,
                                cwd=tmp_path, timeout=60)
        assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr, name
    mapped = subprocess.run([sys.executable, "-c", "import tpudoctor.checks, tpudoctor.reports, tpudoctor.reference_models"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert mapped.returncode == 0, mapped.stderr


def test_code_never_imports_the_top_level_folders():
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (it comes with the test extra)")
    result = subprocess.run([ruff, "check", "--select", "TID251", "--no-cache", "."], capture_output=True,
                            text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_loader_decodes_before_pandas_is_needed(tmp_path):
    """The XSpace loader and what ``profile analyze`` imports before it decode without pandas: a reader
    of a capture's events that makes no table does not pay pandas' import (0.2-0.3 s)."""
    probe = (
        "import sys\n"
        "import tpudoctor.profile.op_trace, tpudoctor.profile.pipeline, tpudoctor.profile.capture\n"
        "import tpudoctor.captures.xspace.reader, tpudoctor.captures.xspace.tables\n"
        "print('pandas' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
