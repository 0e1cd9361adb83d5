"""``tpudoctor memory --topology ... --program ...``: compiled with the real TPU compiler (libtpu, from
``tpudoctor[tpu-compile]``) on this CPU host. The ten programs of examples/preflight/programs.py do not fit on a
v5e:2x2 as written; each is preflighted once (fixes screened at the compiler's least effort, the best one compiled
again at its default effort) and the figures are held against the compiler's own."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from paths import REPO as ROOT

PROGRAMS = ROOT / "examples" / "preflight" / "programs.py"
TPUDOCTOR = [sys.executable, "-m", "tpudoctor"]
HAS_LIBTPU = importlib.util.find_spec("libtpu") is not None
needs_libtpu = pytest.mark.skipif(not HAS_LIBTPU, reason='libtpu is not installed: pip install '
                                                         '"tpudoctor[tpu-compile]" (jax[tpu]) to compile for TPUs here')
MESH = {"data": 2, "model": 2}
NAMES = ("mlp_adam", "transformer_block", "conv_net", "embedding_table", "no_donation_sgd", "f32_inference",
         "long_attention", "deep_scan", "wide_activations", "moe_experts")


def _cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.run([*TPUDOCTOR, "memory", *args], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)


# --- without the compiler: flags, knobs, SKIP ---------------------------------------------------------------------

def test_knob_values_parse_and_refuse_garbage():
    from tpudoctor.preflight.program import parse_knob_values

    assert parse_knob_values(["batch_size=8,4", "remat=true", "dtype=bfloat16"]) == {
        "batch_size": [8, 4], "remat": [True], "dtype": ["bfloat16"]}
    for bad in ("batch_size", "=4", "batch size=4", "batch_size="):
        with pytest.raises(ValueError, match="NAME=VALUE"):
            parse_knob_values([bad])


def test_knobs_tried_are_the_declared_ones_else_derived_from_defaults():
    from tpudoctor.errors import UsageError
    from tpudoctor.preflight.program import knob_changes, load_factory

    declared = knob_changes(load_factory(f"{PROGRAMS}:transformer_block"))
    assert [(c.name, c.value) for c in declared] == [("batch_size", 32), ("remat", True)]

    def factory(mesh, batch_size=64, remat=False, dtype="float32", name="x"):
        raise AssertionError("not called")

    assert [(c.name, c.value) for c in knob_changes(factory)] == [
        ("batch_size", 32), ("remat", True), ("dtype", "bfloat16")]
    assert [(c.name, c.value) for c in knob_changes(factory, {"batch_size": [16, 64]})] == [("batch_size", 16)]
    with pytest.raises(UsageError, match="no such keyword"):
        knob_changes(factory, {"seq": [128]})


@pytest.mark.parametrize("args, message", [
    (["--topology", "v5e:2x2"], "needs both --topology and --program"),
    (["--program", "x.py:f"], "needs both --topology and --program"),
    (["--topology", "v5e:2x2", "--program", "no_such_file.py:make"], "no file 'no_such_file.py'"),
    (["--topology", "v5e:2x2", "--program", f"{PROGRAMS}"], "is not FILE.py:FACTORY"),
    (["--topology", "v5e:2x2", "--program", f"{PROGRAMS}:mlp_adam", "--knob", "batch_size"], "NAME=VALUE"),
])
def test_bad_preflight_flags_exit_2_with_a_message(args, message):
    done = _cli(*args, timeout=60)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_without_libtpu_the_preflight_is_a_skip_saying_what_to_install(monkeypatch):
    import importlib.util as util

    from tpudoctor.preflight.analysis import preflight

    real = util.find_spec
    monkeypatch.setattr(util, "find_spec", lambda name, *a: None if name == "libtpu" else real(name, *a))
    report = preflight(f"{PROGRAMS}:mlp_adam", "v5e:2x2", mesh=MESH)
    assert report.fits is None and report.fixes == []
    assert 'pip install "tpudoctor[tpu-compile]"' in report.skipped
    from tpudoctor.documents import prepare
    from tpudoctor.rendering import render

    text = render(prepare(report, redact=False), "text")
    assert "[-] memory-preflight fits in memory: libtpu (the TPU compiler) is not" in text, text


# --- with the compiler --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def suite():
    if not HAS_LIBTPU:
        pytest.skip('libtpu is not installed: pip install "tpudoctor[tpu-compile]"')
    from tpudoctor.preflight.analysis import preflight

    return {name: preflight(f"{PROGRAMS}:{name}", "v5e:2x2", mesh=MESH, verify=1) for name in NAMES}


@pytest.mark.slow
@needs_libtpu
def test_none_of_the_ten_fits_as_written_and_the_compiler_says_so(suite):
    for name, report in suite.items():
        assert report.fits is False, name
        assert report.limit_bytes == int(15.75 * (1 << 30)), name  # v5e: 16 GiB, the compiler allows 15.75
        assert "RESOURCE_EXHAUSTED: Ran out of memory on HBM" in report.error, name
        assert report.total_bytes > report.limit_bytes, name


@pytest.mark.slow
@needs_libtpu
def test_the_top_ranked_fix_compiled_at_default_effort_fits_for_at_least_eight(suite):
    fitting = [name for name, r in suite.items()
               if r.fixes and r.fixes[0].fits and r.fixes[0].effort == "default"]
    assert len(fitting) >= 8, {n: [f.label for f in r.fixes[:2]] for n, r in suite.items()}
    for name in fitting:
        top = suite[name].fixes[0]
        assert top.total_bytes <= top.limit_bytes, name
        assert top.label.startswith("compiled: fits at "), top.label


@pytest.mark.slow
@needs_libtpu
def test_attribution_names_every_byte_and_sums_to_the_compilers_figures(suite):
    for name, report in suite.items():
        attribution = report.attribution
        assert attribution is not None, name
        assert attribution.named_fraction == 1.0, name
        assert sum(attribution.buckets.values()) == attribution.peak_bytes == report.total_bytes, name
        # what the compiler's out-of-memory text says it needs (to 0.01G)
        assert abs(attribution.peak_bytes - report.required_bytes) <= 0.01 * report.required_bytes, name
        for fix in report.fixes:
            if fix.effort == "default" and fix.fits:
                _plan_against_memory_analysis(fix.plan_summary, fix.stats, (name, fix.name))


def _plan_against_memory_analysis(plan: dict, stats: dict, what) -> None:
    """The buffer assignment's reader against the compiler's memory_analysis(): arguments, outputs and aliases to
    the byte. The peak: the assignment's allocations all at once, against ``peak_memory_in_bytes``, the compiler's
    own peak over the schedule; measured 2026-12-05: from 95.4 MiB under it (a program scratch of 57-95 MiB the
    dump's default memory does not hold: 1.6 % of a 1.6 GB v5e program, 1.1 % of no_donation_sgd at width=16384) to
    5.8 % over (long_attention at seq=4096: outputs not live at the heap's peak)."""
    assert plan["argument_bytes"] == stats["argument_size_in_bytes"], what
    assert plan["output_bytes"] == stats["output_size_in_bytes"], what
    assert plan["alias_bytes"] == stats["alias_size_in_bytes"], what
    peak = stats["peak_memory_in_bytes"]
    assert peak - (100 << 20) <= plan["peak_bytes"] <= 1.06 * peak, (what, plan, stats)


@pytest.mark.slow
@needs_libtpu
def test_predicted_savings_of_the_verified_fixes_against_the_recompile(suite):
    errors = {name: r.fixes[0].prediction_error for name, r in suite.items()
              if r.fixes and r.fixes[0].effort == "default" and r.fixes[0].prediction_error is not None}
    assert len(errors) >= 8, errors
    # measured 2026-12-05: 10 of 10 within 10 % (8 before conv_net's bf16 counted the ReLU mask it saves and
    # long_attention's seq scaled the scores as the step's own values do, by seq squared)
    assert sum(1 for e in errors.values() if e <= 0.10) >= 9, errors
    assert max(errors.values()) <= 0.15, errors
    assert errors["conv_net"] <= 0.01 and errors["long_attention"] <= 0.01, errors
    # deep_scan's bf16 saves the whole bfloat16 copy the compiler made of the float32 stacked weights (4 GiB):
    # predicted 12.32 GiB of 12.32 recompiled (32.5 % off when only half the float32 bytes were counted)
    assert errors["deep_scan"] <= 0.01, errors


@pytest.mark.slow
@needs_libtpu
def test_largest_buffers_name_op_shape_and_source_line(suite):
    rows = suite["transformer_block"].largest_buffers
    assert rows and rows[0]["bytes"] >= rows[-1]["bytes"]
    assert any("programs.py:" in row["source"] for row in rows)
    assert all(row["shape"] and (row["op_name"] or row["instruction"]) for row in rows)


@pytest.mark.slow
@needs_libtpu
def test_cli_json_for_a_program_that_does_not_fit_exits_1_and_names_the_smallest_topology():
    done = _cli("--topology", "v5e:2x2,v5e:2x4,v5p:2x2x1", "--program", f"{PROGRAMS}:embedding_table",
                "--mesh", "data=2,model=2", "--no-fixes", "--format", "json")
    assert done.returncode == 1, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["fits"] is False and doc["devices"] == 4
    assert doc["attribution"]["named_fraction"] == 1.0
    assert doc["smallest_fitting_topology"] == "v5p:2x2x1"  # 95.74 GiB a chip; v5e:2x4 has as little a chip
    from tpudoctor.schema import validate

    validate(doc, "memory_preflight")  # the command's JSON is the prepared, validated document


@pytest.mark.slow
@needs_libtpu
@pytest.mark.parametrize("fmt", ["html", "junit"])
def test_cli_writes_the_preflight_in_every_format(fmt):
    done = _cli("--topology", "v5e:2x2", "--program", f"{PROGRAMS}:mlp_adam", "--mesh", "data=2,model=2",
                "--no-fixes", "--format", fmt)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "does not fit: needs 25.03 GiB of 15.75 GiB" in done.stdout
    if fmt == "html":
        assert "<h2>Peak by bucket" in done.stdout and "optimizer state" in done.stdout
    else:
        import xml.etree.ElementTree as ET

        suite = ET.fromstring(done.stdout).find("testsuite")
        assert suite.get("failures") == "1" and suite.find("testcase/failure") is not None


@pytest.mark.slow
@needs_libtpu
@pytest.mark.parametrize("topology, kind, limit_gib", [
    ("v4:2x2x1", "TPU v4", 15.25), ("v5e:2x2", "TPU v5 lite", 15.75), ("v6e:2x2", "TPU v6 lite", 31.25)])
def test_the_buffer_plan_reader_matches_memory_analysis_on_three_generations(topology, kind, limit_gib):
    from tpudoctor.preflight.analysis import preflight

    # a program that fits: the compile runs to the end and memory_analysis() has every figure
    report = preflight(f"{PROGRAMS}:mlp_adam", topology, settings={"width": 4096}, apply_fixes=False)
    assert report.fits is True and report.device_kind == kind
    assert report.limit_bytes == int(limit_gib * (1 << 30))
    stats, attribution = report.stats, report.attribution
    _plan_against_memory_analysis(report.plan_summary, stats, topology)
    assert sum(attribution.buckets.values()) == attribution.peak_bytes and attribution.named_fraction == 1.0
    # the peak attributed from the buffer assignment is the compiler's own, to the byte: the parameters, outputs
    # and constants, and the buffers live at the larger temporary heap's peak (the allocations all at once are not)
    assert attribution.peak_bytes == stats["peak_memory_in_bytes"] == report.total_bytes, topology
    assert attribution.buckets["fragmentation"] == 0  # a heap's peak is its live bytes
    # Adam's mu and nu (JAX names the parameters by their argument path): twice the four 4096 x 4096 f32 weights
    assert attribution.buckets["optimizer_state"] == 2 * 4 * 4096 * 4096 * 4
    assert report.headroom_bytes == report.limit_bytes - report.total_bytes > 0


@pytest.mark.slow
@needs_libtpu
def test_a_pallas_kernel_over_vmem_is_named_as_such_and_its_block_knob_compiled():
    from tpudoctor.documents import prepare
    from tpudoctor.preflight.analysis import preflight
    from tpudoctor.rendering import render

    report = preflight(f"{ROOT}/examples/preflight/pallas_matmul.py:matmul_step", "v5e:2x2", verify=1)
    assert report.fits is False and report.memory_space == "vmem"
    assert "Ran out of memory in memory space vmem" in report.error
    assert [f.name for f in report.fixes] == ["block=256"]  # HBM fixes cannot reach a kernel's VMEM
    assert report.fixes[0].fits and report.fixes[0].effort == "default"
    text = render(prepare(report, redact=False), "text")
    assert "does not fit in VMEM" in text and "block=256" in text and "compiled: fits at" in text


def _compiled_saving(name: str, build_fix):
    """(predicted, compiled) saving of one fix on examples/preflight/programs.py:NAME on v5e:2x2: the baseline that
    does not fit, the fix predicted from its buffer assignment, applied and recompiled."""
    from tpudoctor.memory.attribution import attribute
    from tpudoctor.preflight import compiler
    from tpudoctor.preflight.program import abstract_args, load_factory

    compiler.prepare_environment()
    factory = load_factory(f"{PROGRAMS}:{name}")
    mesh = compiler.build_mesh(compiler.topology_devices("v5e:2x2"), MESH)
    step, args = factory(mesh)
    args = abstract_args(args, mesh)
    base = compiler.compile_for_topology(step, args)
    assert base.out_of_memory and base.plan is not None, base.error[:300]
    candidate = build_fix(factory, mesh, step, args, attribute(base.plan))
    new_step, new_args, donate = candidate.build()
    fixed = compiler.compile_for_topology(new_step, new_args, donate_argnums=donate)
    assert fixed.fits, fixed.error[:300]
    return candidate.predicted_saving_bytes, base.total_bytes - fixed.total_bytes


@pytest.mark.slow
@needs_libtpu
def test_a_sequence_knob_saves_the_attention_scores_by_its_square():
    from tpudoctor.preflight import fixes
    from tpudoctor.preflight.program import KnobChange

    # the peak holds two f32[4,8,16384,16384] scores (32 GiB each): seq 16384 -> 4096 shrinks them 16x, not 4x
    # (predicted 48.75 GiB of 60.91 compiled, 20 % off, when each dimension of the knob's size counted once)
    predicted, compiled = _compiled_saving("long_attention", lambda factory, mesh, step, args, attribution: fixes.knob(
        factory, mesh, KnobChange("seq", 4096, 16384), step, args, attribution))
    assert abs(predicted - compiled) <= 0.01 * compiled, (predicted / (1 << 30), compiled / (1 << 30))


@pytest.mark.slow
@needs_libtpu
def test_bf16_saves_the_relu_mask_the_compiler_keeps_beside_a_float32_activation():
    from tpudoctor.preflight import fixes

    # conv_net's last layer: one fusion makes the f32 activation and its ReLU mask (pred, 1.53 GiB); with bf16
    # values the backward compares the kept activation instead (predicted 12.30 GiB of 13.83 compiled, 11.1 % off,
    # when the mask was left out)
    predicted, compiled = _compiled_saving("conv_net", lambda factory, mesh, step, args, attribution: fixes.bf16(
        step, args, attribution))
    assert abs(predicted - compiled) <= 0.01 * compiled, (predicted / (1 << 30), compiled / (1 << 30))
