"""The memory fix rules (tpudoctor.memory.rules) on the one rule base, and the known-fix cases.

Each known-fix case is a JAX program (on CPU) whose memory is too big and the change that fixes it. The
'before' programs run under one ``jax.profiler`` trace; their plans come from that capture (the shard case from a
capture of its own process, which needs 4 CPU devices). For each, the top-ranked fix must be the change, and its
predicted saving within 10 % of ``memory_analysis()`` before minus after (argument + output + temp - alias: the
donation cases change output - alias, bf16 the argument, remat and the callback the temp, the batch all three,
the shard the argument).

What CPU cannot show: tiling padding (CPU layouts have no tiles; the padding case is a synthetic TPU layout) and
per-layer checkpoints in an unrolled loop (XLA's CPU scheduler runs the recomputation early: measured 0 saved;
the remat rule's confidence is low there).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from paths import TESTS
from shared_data import SHARED_DATA

from tpudoctor.captures.plan_spec import Value, synthetic_plan
from tpudoctor.families import FAMILIES
from tpudoctor.families import load_rules as load_family
from tpudoctor.findings import FindingKind, Status
from tpudoctor.memory.fix_rule import (
    FINDING_KIND,
    MemoryPlanInput,
    MemoryRule,
    evaluate_rules,
    rank_fixes,
)
from tpudoctor.memory.plan_capture import plans_from_xspace
from tpudoctor.rule import Rule, conformance_problems

FAMILY = FAMILIES["memory-rules"]


def load_rules(*args, **kwargs):
    return load_family("memory-rules", *args, **kwargs)


TOLERANCE = 0.10
CASES_DIR = TESTS / "data" / "memory_cases"

# --- the family ----------------------------------------------------------------------------------------------------


def test_the_family_is_a_plugins_family_of_memory_rules():
    assert FAMILY.name == "memory-rules" and FAMILY.alias_group == "tpudoctor.memory_rules"
    assert FAMILY.bases == (MemoryRule,) and issubclass(MemoryRule, Rule)
    rules = load_rules(plugins=False)
    assert set(rules) >= {"donate-buffers", "bf16-parameters", "rematerialise-activations",
                          "host-callback-pins-buffer", "tiling-padding", "shard-unused-mesh-axis", "smaller-batch"}
    assert FINDING_KIND in (FindingKind.PROFILE, getattr(FindingKind, "MEMORY", None))


@pytest.mark.parametrize("rule", list(load_rules(plugins=False).values()), ids=lambda r: r.id)
def test_every_rule_conforms_and_its_findings_carry_a_saving_and_a_confidence(rule):
    assert conformance_problems(rule) == []
    assert len(rule.examples) >= 2 and {e.status for e in rule.examples} >= {Status.PASS}
    for example in rule.examples:
        finding = rule().evaluate(example.input)
        assert finding.kind is FINDING_KIND
        assert {"saving_bytes", "confidence", "confidence_why"} <= set(finding.evidence)
        assert finding.evidence["confidence"] in ("high", "medium", "low", "unknown")
        assert finding.confidence is not None and finding.confidence.level.value == finding.evidence["confidence"]
        if finding.evidence["confidence"] == "unknown":
            assert finding.status is Status.PASS and finding.evidence["confidence_why"]


def test_a_wrong_example_saving_does_not_conform():
    rule = load_rules(plugins=False)["donate-buffers"]
    bad = dataclasses.replace(rule.examples[0], saving_bytes=1)

    class Wrong(rule):
        examples = (bad,)

    assert any("predicted" in p for p in conformance_problems(Wrong))


def test_a_crashing_rule_is_an_error_finding_and_the_others_still_rank():
    class Broken(MemoryRule):
        """Crashes."""

        id = "broken"
        fix = "nothing"

        def saving(self, subject):
            raise RuntimeError("boom")

    rules = dict(load_rules(plugins=False), broken=Broken)
    subject = load_rules(plugins=False)["donate-buffers"].examples[0].input
    findings = evaluate_rules(subject, rules)
    assert findings[0].id == "donate-buffers" and any(f.id == "broken" and f.status is Status.ERROR for f in findings)


def test_capacity_makes_a_fix_that_alone_fits_high():
    subject = load_rules(plugins=False)["donate-buffers"].examples[0].input
    peak = subject.peak_bytes
    tight = dataclasses.replace(subject, capacity_bytes=peak - (1 << 20))
    finding = load_rules(plugins=False)["donate-buffers"]().evaluate(tight)
    assert finding.status is Status.FAIL and finding.evidence["over_capacity_bytes"] == 1 << 20


# --- the known-fix cases -------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    name: str
    before: object
    after: object
    args_before: tuple
    args_after: tuple
    fix: str
    options: dict = dataclasses.field(default_factory=dict)


def _cases():
    import jax
    import jax.numpy as jnp

    def sgd(params, grads):
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

    def adam(params, mu, nu, g):
        mu = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, mu, g)
        nu = jax.tree.map(lambda n, g: 0.99 * n + 0.01 * g * g, nu, g)
        params = jax.tree.map(lambda p, m, n: p - 1e-3 * m / (jnp.sqrt(n) + 1e-8), params, mu, nu)
        return params, mu, nu

    def embed(table, ids):
        return table[ids].sum(-1)

    def block(p, x):
        return x + jax.nn.gelu(x @ p[0]) @ p[1]

    def scan_blocks(ps, x, remat=False):
        def body(x, p):
            return block(p, x), None

        x, _ = jax.lax.scan(jax.checkpoint(body) if remat else body, x, ps)
        return jnp.sum(x)

    def scan_tanh(ws, x, remat=False):
        def body(x, w):
            return jnp.tanh(x @ w), None

        x, _ = jax.lax.scan(jax.checkpoint(body) if remat else body, x, ws)
        return jnp.sum(x)

    def pinned(x):
        h = jnp.exp(x[:, None] * x[None, :])
        jax.debug.callback(lambda v: None, h)  # a debug hook that reads the whole intermediate
        return h.sum()

    def unpinned(x):
        return jnp.exp(x[:, None] * x[None, :]).sum()

    def mlp(ws, x):
        for w in ws:
            x = jax.nn.relu(x @ w)
        return x

    params = {f"w{i}": jnp.ones((512, 512)) for i in range(4)}
    adam_params = {f"w{i}": jnp.ones((256, 512)) for i in range(3)}
    table, ids = jnp.ones((8192, 512)), jnp.arange(256)
    h = 256
    blocks = (jnp.ones((6, h, 4 * h)) * 0.01, jnp.ones((6, 4 * h, h)) * 0.01)
    x = jnp.ones((512, h))
    ws = jnp.ones((16, 256, 256)) * 0.01
    xc = jnp.ones((1024,))
    wb = [jnp.ones((256, 256), jnp.bfloat16) for _ in range(2)]
    return [
        Case("donate an SGD update", jax.jit(sgd), jax.jit(sgd, donate_argnums=0), (params, params),
             (params, params), "donate-buffers"),
        Case("donate Adam's params and state", jax.jit(adam), jax.jit(adam, donate_argnums=(0, 1, 2)),
             (adam_params,) * 4, (adam_params,) * 4, "donate-buffers"),
        Case("bf16 embedding table", jax.jit(embed), jax.jit(embed), (table, ids),
             (table.astype(jnp.bfloat16), ids), "bf16-parameters"),
        Case("checkpoint a scan of MLP blocks", jax.jit(jax.grad(scan_blocks)),
             jax.jit(jax.grad(partial(scan_blocks, remat=True))), (blocks, x), (blocks, x),
             "rematerialise-activations"),
        Case("checkpoint a scan of tanh layers", jax.jit(jax.grad(scan_tanh)),
             jax.jit(jax.grad(partial(scan_tanh, remat=True))), (ws, x), (ws, x), "rematerialise-activations"),
        Case("drop a debug callback", jax.jit(pinned), jax.jit(unpinned), (xc,), (xc,),
             "host-callback-pins-buffer"),
        Case("halve the batch", jax.jit(mlp), jax.jit(mlp), (wb, jnp.ones((4096, 256), jnp.bfloat16)),
             (wb, jnp.ones((2048, 256), jnp.bfloat16)), "smaller-batch", {"batch_size": 4096}),
    ]


def _total(compiled) -> int:
    m = compiled.memory_analysis()
    return m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes


def _module_name(compiled) -> str:
    return compiled.as_text().split("\n", 1)[0].split()[1].rstrip(",")


def _plan_of(plans, compiled):
    name, total = _module_name(compiled), _total(compiled)
    found = [p for p in plans.values() if p.module_name == name and p.peak_bytes - p.constant_bytes == total]
    assert found, f"no plan of {name} with {total} bytes in the capture"
    return found[0]


@pytest.fixture(scope="module")
def known_fixes(tmp_path_factory):
    """Each case: (its plan from the capture, the measured saving). The 'before' programs run in one trace."""
    jax = pytest.importorskip("jax")
    cases = _cases()
    compiled = [(c, c.before.lower(*c.args_before).compile(), c.after.lower(*c.args_after).compile()) for c in cases]
    out = tmp_path_factory.mktemp("memory_cases_trace")
    jax.profiler.start_trace(str(out))
    for case, before, _ in compiled:
        jax.block_until_ready(before(*case.args_before))
    jax.profiler.stop_trace()
    (path,) = Path(out).glob("**/*.xplane.pb")
    plans = plans_from_xspace(str(path))
    return {case.name: (case, _plan_of(plans, before), _total(before) - _total(after))
            for case, before, after in compiled}


CASE_NAMES = ["donate an SGD update", "donate Adam's params and state", "bf16 embedding table",
              "checkpoint a scan of MLP blocks", "checkpoint a scan of tanh layers", "drop a debug callback",
              "halve the batch"]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_the_top_fix_is_the_change_and_its_saving_is_measured(known_fixes, name):
    case, plan, measured = known_fixes[name]
    subject = MemoryPlanInput(plan, **case.options)
    assert subject.attribution.named_fraction >= 0.95
    fixes = rank_fixes(subject, load_rules(plugins=False))
    assert fixes, f"no fix for {name}"
    top = fixes[0]
    assert top.id == case.fix, [(f.id, f.evidence["saving_bytes"]) for f in fixes]
    predicted = top.evidence["saving_bytes"]
    assert measured > 0 and abs(predicted - measured) <= TOLERANCE * measured, (predicted, measured)


@pytest.mark.slow
def test_shard_along_the_unused_mesh_axis(tmp_path):
    """Case 8, in a process with 4 CPU devices: weights P('data', None) on a (data=2, model=2) mesh."""
    pytest.importorskip("jax")
    run = subprocess.run([sys.executable, str(CASES_DIR / "shard_case.py"), str(tmp_path / "trace")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    plans = plans_from_xspace(result["xplane"])
    (plan,) = [p for p in plans.values() if p.module_name == result["module"]
               and p.peak_bytes - p.constant_bytes == result["before"]]
    assert plan.partitions == 4
    fixes = rank_fixes(MemoryPlanInput(plan, mesh={"data": 2, "model": 2}), load_rules(plugins=False))
    top, measured = fixes[0], result["before"] - result["after"]
    assert top.id == "shard-unused-mesh-axis" and top.evidence["confidence"] == "high"
    assert top.evidence["mesh_axes"] == ["data", "model"]  # both axes have size 2: either could be the unused one
    assert abs(top.evidence["saving_bytes"] - measured) <= TOLERANCE * measured, (top.evidence, measured)


def test_tiling_padding_on_a_synthetic_tpu_layout():
    """CPU has no tiles: on a TPU layout, an f32[N, 3] under T(8,128) is fixed by storing it as [3, N]; the
    'measured' saving is the difference of the two plans' footprints under the same tiling."""
    def plan(dims):
        return synthetic_plan([Value("points", dims=dims, kind="parameter", op_name="points", tiles=((8, 128),)),
                               Value("scaled", dims=dims, op_name="jit(f)/mul", tiles=((8, 128),)),
                               Value("out", dims=(), kind="output", op_name="jit(f)/reduce_sum")])
    before, after = plan((100_000, 3)), plan((3, 100_000))
    measured = before.peak_bytes - after.peak_bytes
    top = rank_fixes(MemoryPlanInput(before), load_rules(plugins=False))[0]
    assert top.id == "tiling-padding" and abs(top.evidence["saving_bytes"] - measured) <= TOLERANCE * measured
    cpu = load_rules(plugins=False)["tiling-padding"]().evaluate(MemoryPlanInput(synthetic_plan(
        [Value("points", dims=(100_000, 3), kind="parameter", op_name="points")])))
    assert cpu.status is Status.PASS and cpu.evidence["confidence"] == "unknown"


@pytest.mark.slow
def test_per_layer_checkpoints_in_an_unrolled_loop_save_nothing_on_cpu_and_the_rule_is_not_sure():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def block(p, x):
        return x + jax.nn.gelu(x @ p[0]) @ p[1]

    def unrolled(ps, x, remat=False):
        for p in ps:
            x = (jax.checkpoint(block) if remat else block)(p, x)
        return jnp.sum(x)

    ps = [(jnp.ones((128, 512)) * 0.01, jnp.ones((512, 128)) * 0.01) for _ in range(4)]
    x = jnp.ones((256, 128))
    before = jax.jit(jax.grad(unrolled)).lower(ps, x).compile()
    after = jax.jit(jax.grad(partial(unrolled, remat=True))).lower(ps, x).compile()
    assert _total(before) == _total(after)  # XLA's CPU scheduler recomputes early: nothing saved
    rule = load_rules(plugins=False)["rematerialise-activations"]
    examples = {e.name: e for e in rule.examples}
    unrolled_example = rule().evaluate(examples["MLP block keeping three buffers a layer"].input)
    assert unrolled_example.evidence["confidence"] == "low" and "unrolled" in unrolled_example.evidence[
        "confidence_why"]


# --- the batch fix's split (the 2026-12-04 probe's N11) --------------------------------------------------------------

SHARED_TPU = SHARED_DATA / "xprof_tpu_inference_2.xplane.pb"


def test_an_inference_capture_with_an_odd_batch_gets_a_smaller_serving_batch_and_one_saving(capsys):
    """The v6e inference capture (no backward pass, arrays ``f32[5,1024,1024,256]``): 5 -> 3 keeps 3/5 of the batch
    bytes (40 % saved, not "5 -> 2 ... 50 %"), and no gradient accumulation is offered."""
    from tpudoctor import cli

    if not SHARED_TPU.exists():
        pytest.skip(f"{SHARED_TPU} is not here (../shared/data holds the real captures)")
    code = cli.main(["memory", str(SHARED_TPU), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    (batch,) = [f for f in doc["findings"] if f["id"] == "smaller-batch"]
    e = batch["evidence"]
    assert (e["batch_size"], e["micro_batches"], e["gradient"]) == (5, [3, 2], False)
    assert e["saving_bytes"] == e["batch_bytes"] - e["batch_bytes"] * 3 // 5 and e["saving_percent_of_peak"] == 40.0
    assert "expected_saving_bytes" not in e and code == 0
    words = batch["message"] + (batch.get("remediation") or {}).get("text", "")
    assert "5 -> 3" in words and "accumulate" not in words.lower() and "serving batch" in words


def _training_program(batch: int) -> MemoryPlanInput:
    values = [Value("w", dtype="bf16", dims=(256, 256), kind="parameter", op_name="w"),
              Value("x", dtype="bf16", dims=(batch, 1024), kind="parameter", op_name="x"),
              Value("h", dtype="bf16", dims=(batch, 4096), op_name="jit(train_step)/jvp(f)/dot_general"),
              Value("dh", dtype="bf16", dims=(batch, 4096), op_name="jit(train_step)/transpose(jvp(f))/dot_general"),
              Value("dw", dtype="bf16", dims=(256, 256), kind="output",
                    op_name="jit(train_step)/transpose(jvp(f))/dot_general")]
    return MemoryPlanInput(synthetic_plan(values, name="jit_train_step"), batch_size=batch)


@pytest.mark.parametrize(("batch", "larger", "split"), [(4096, 2048, "2 of 2048"), (4097, 2049, "2049 and 2048")])
def test_a_training_program_accumulates_gradients_over_micro_batches_that_add_up(batch, larger, split):
    from tpudoctor.memory.rules.batch import SmallerBatch

    subject = _training_program(batch)
    assert subject.attribution.is_gradient
    finding = SmallerBatch().evaluate(subject)
    e = finding.evidence
    assert sum(e["micro_batches"]) == batch and max(e["micro_batches"]) == larger and e["gradient"] is True
    assert e["saving_bytes"] == e["batch_bytes"] - e["batch_bytes"] * larger // batch
    assert f"micro-batches of {split}" in finding.message
    fixes = finding.remediation.text
    if batch % 2:  # MultiSteps averages micro-batches alike: uneven ones are weighted by their size instead
        assert "MultiSteps" not in fixes and f"divided by {batch}" in fixes
    else:
        assert "every_k_schedule=2" in fixes
