"""``tpudoctor memory`` as a Python API, no command line: ``tpudoctor.memory.product.run(inputs, options,
progress)`` on a real out-of-memory log, and its preflight branch (``--topology``/``--program``) through the same
``run``, options built from the parsed flags by ``MemoryRunOptions.from_args``."""

from __future__ import annotations

import importlib.util

import pytest
from paths import REPO as ROOT

from tpudoctor import cli
from tpudoctor.errors import UsageError
from tpudoctor.exitcodes import ExitCode
from tpudoctor.findings import exit_code_for
from tpudoctor.memory import product
from tpudoctor.memory.product import MemoryRunOptions
from tpudoctor.memory.report import MemoryReport
from tpudoctor.preflight.analysis import PreflightReport
from tpudoctor.settings import Settings

OOM_LOG = ROOT / "tests" / "data" / "memory" / "easydel_166_compile_hbm_report.log"
PROGRAMS = ROOT / "examples" / "preflight" / "programs.py"


def _options(*argv: str) -> MemoryRunOptions:
    args = cli.build_parser().parse_args(["memory", *argv])
    return MemoryRunOptions.from_args(args, Settings.resolve(args, args.settings_spec, environ={}, config={}))


def test_run_reads_an_oom_log_into_a_failing_memory_report():
    said: list[str] = []
    report = product.run([str(OOM_LOG)], _options(str(OOM_LOG), "--mesh", "data=8"), said.append)
    assert isinstance(report, MemoryReport)
    (oom,) = [f for f in report.findings if f.id == "memory-oom"]
    assert oom.status.value == "FAIL" and "63.80 GiB used of 30.75 GiB" in oom.message
    assert exit_code_for(report) is ExitCode.FINDINGS
    assert said, "run reports its progress"


@pytest.mark.parametrize("argv, message", [
    ((), "say what to read"),
    ((str(OOM_LOG), "--mesh", "data=x"), "--mesh: mesh axis 'data=x' is not NAME=SIZE"),
    ((str(OOM_LOG), "--batch-size", "0"), "--batch-size must be at least 1"),
    (("--topology", "v5e:2x2"), "a preflight needs both --topology and --program"),
    ((str(OOM_LOG), "--topology", "v5e:2x2", "--program", "p.py:f"), "not both"),
    (("--topology", "v5e:2x2", "--program", "p.py:f", "--verify", "-2"), "--verify must be -1"),
])
def test_options_refuse_bad_flags_with_a_usage_error(argv, message):
    with pytest.raises(UsageError) as raised:
        _options(*argv)
    assert message in raised.value.message


def test_run_with_preflight_options_compiles_the_program_and_without_libtpu_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "libtpu" else real(name, *a))
    options = _options("--topology", "v5e:2x2,v5e:2x4", "--program", f"{PROGRAMS}:mlp_adam", "--mesh",
                       "data=2,model=2", "--no-fixes")
    assert options.preflight is not None and options.preflight.topologies == ("v5e:2x2", "v5e:2x4")
    assert options.preflight.program_file == str(PROGRAMS) and options.preflight.apply_fixes is False
    report = product.run([], options, None)
    assert isinstance(report, PreflightReport) and report.program == f"{PROGRAMS}:mlp_adam"
    assert 'pip install "tpudoctor[tpu-compile]"' in report.skipped
    assert report.refusal is None and report.results == [] and exit_code_for(report) is ExitCode.OK


EIG_PROGRAM = '''
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def make(mesh, n=64):
    x = jax.ShapeDtypeStruct((n, n), jnp.float32, sharding=NamedSharding(mesh, P()))
    return jax.jit(lambda a: jnp.linalg.eig(a)[0].real), (x,)
'''


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None, reason="libtpu (the TPU compiler) is not installed")
def test_a_program_the_tpu_compiler_refuses_is_written_then_refused(tmp_path):
    """jnp.linalg.eig has no TPU lowering: the report says so, and its refusal (exit 2 once written) is set
    unless --exit-zero."""
    program = tmp_path / "eig_program.py"
    program.write_text(EIG_PROGRAM)
    argv = ("--topology", "v5e:2x2", "--program", f"{program}:make", "--mesh", "data=2,model=2", "--no-fixes")
    report = product.run([], _options(*argv), None)
    assert report.total_bytes is None and "'eig' not found for platform tpu" in report.error
    assert report.refusal is not None and "does not compile for v5e:2x2" in report.refusal.message
    assert report.refusal.exit_code == ExitCode.USAGE_ERROR
    assert _options(*argv, "--exit-zero").preflight.refuse_uncompiled is False
