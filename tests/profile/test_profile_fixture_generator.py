"""The fixture generator makes a real capture that loads and gets its expected verdict."""

from __future__ import annotations

import subprocess
import sys

import pytest
from paths import TESTS

GENERATOR = TESTS / "fixtures" / "profiles" / "generate.py"


@pytest.mark.slow
def test_generator_makes_a_recompiling_jax_capture(tmp_path):
    pytest.importorskip("jax", reason="JAX is not installed (test extra)")
    done = subprocess.run([sys.executable, str(GENERATOR), "jax_recompiling", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    capture = tmp_path / "jax_recompiling" / "localhost.xplane.pb"
    assert 10_000 < capture.stat().st_size < 1_000_000

    import tpudoctor.profile

    doc = tpudoctor.profile.analyze(str(capture)).to_dict()
    assert doc["verdict"] == "compile-bound"
    functions = {f["function"]: f["compile_count"] for f in doc["recompilation"]["functions"]}
    assert functions == {"train_step": 8}
