"""Hold read-only f32 parameters (weights of a forward pass, embedding tables, caches) in bf16."""

from __future__ import annotations

from tpudoctor.captures.plan_spec import Value, synthetic_plan
from tpudoctor.findings import Status
from tpudoctor.memory.fix_rule import Example, MemoryPlanInput, MemoryRule, Saving
from tpudoctor.memory.rules._common import is_optimizer_parameter, parameters, same_kind

FLOAT32 = "f32"


def _inference(dtype: str) -> MemoryPlanInput:
    values = [Value("table", dtype=dtype, dims=(8192, 1024), kind="parameter", op_name="table"),
              Value("ids", dtype="s32", dims=(512,), kind="parameter", op_name="ids"),
              Value("out", dtype=dtype, dims=(512,), kind="output", op_name="jit(embed)/reduce_sum")]
    return MemoryPlanInput(synthetic_plan(values, name="jit_embed"))


def _updated() -> MemoryPlanInput:
    values = [Value("w", dims=(4096, 1024), kind="parameter", op_name="params['w']"),
              Value("new_w", dims=(4096, 1024), kind="output", op_name="jit(step)/sub")]
    return MemoryPlanInput(synthetic_plan(values, name="jit_step"))


class Bfloat16Parameters(MemoryRule):
    """f32 parameters the program only reads (no output of their shape: weights of an inference or forward pass,
    embedding tables, caches) held in bf16 take half the bytes. Parameters the program updates (an output of the
    same shape and dtype: master weights, optimizer state) are left in f32. Confidence medium: the half assumes
    the program computes from the bf16 copy; XLA may upcast (on CPU it converts bf16 matmul operands to f32,
    adding temporaries)."""

    id = "bf16-parameters"
    title = "No large f32 parameter is only read"
    fix = "hold read-only f32 parameters in bf16"
    keeps_numerics = False
    docs = "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.bfloat16.html"
    examples = (
        Example("f32 embedding table", _inference(FLOAT32), Status.WARN, saving_bytes=8192 * 1024 * 2),
        Example("already bf16", _inference("bf16"), Status.PASS, saving_bytes=0),
        Example("f32 weights the step updates", _updated(), Status.PASS, saving_bytes=0),
    )

    def saving(self, subject: MemoryPlanInput) -> Saving:
        plan = subject.plan
        out_shapes = [shape for _, shape, _ in plan.outputs()]
        chosen = []
        for inst, alloc, name in parameters(plan):
            if inst.shape.dtype != FLOAT32 or len(inst.shape.dims) < 2 or alloc is None or not alloc.counted:
                continue
            if is_optimizer_parameter(subject, inst.parameter_number, name):
                continue
            if any(same_kind(inst.shape, s) for s in out_shapes):
                continue
            chosen.append((inst, alloc, name))
        saved = sum(alloc.size_bytes // 2 for _, alloc, _ in chosen)
        names = [name or f"parameter {inst.parameter_number}" for inst, _, name in chosen]
        return Saving(saved, "medium", "bf16 halves each read-only f32 parameter; the program must compute from "
                      "the bf16 copy (XLA may upcast: on CPU bf16 matmuls run in f32)",
                      what=f"hold {len(chosen)} read-only f32 parameter(s) ({', '.join(names[:4])}"
                           f"{', ...' if len(names) > 4 else ''}) in bf16",
                      details={"parameters": [i.parameter_number for i, _, _ in chosen][:50],
                               "parameter_names": names[:50],
                               "f32_bytes": sum(a.size_bytes for _, a, _ in chosen)},
                      fixes=("Cast the weights once, outside the step: params = jax.tree.map(lambda p: "
                             "p.astype(jnp.bfloat16), params) (keep an f32 master copy only where training "
                             "updates it)",
                             "Flax: nn.Dense(..., param_dtype=jnp.bfloat16) for layers that are not trained"))
