"""Donate the buffers of parameters the program replaces (``donate_argnums``)."""

from __future__ import annotations

from tpudoctor.captures.plan_spec import Value, synthetic_plan
from tpudoctor.findings import Status
from tpudoctor.memory.fix_rule import Example, MemoryPlanInput, MemoryRule, Saving
from tpudoctor.memory.rules._common import (
    donated_parameters,
    output_is_gradient,
    parameters,
    same_kind,
    top_level_names,
)


def _update_step(donated: bool) -> MemoryPlanInput:
    values = [Value(f"params_w{i}", dims=(1024, 1024), kind="parameter", op_name=f"params['w{i}']", donated=donated)
              for i in range(2)]
    values += [Value(f"grads_w{i}", dims=(1024, 1024), kind="parameter", op_name=f"grads['w{i}']")
               for i in range(2)]
    if not donated:
        values += [Value(f"new_w{i}", dims=(1024, 1024), kind="output", op_name="jit(sgd)/sub") for i in range(2)]
    return MemoryPlanInput(synthetic_plan(values, name="jit_sgd"))


def _gradients_out() -> MemoryPlanInput:
    values = [Value("w", dims=(1024, 1024), kind="parameter", op_name="w"),
              Value("x", dims=(256, 1024), kind="parameter", op_name="x"),
              Value("dw", dims=(1024, 1024), kind="output", op_name="jit(f)/transpose(jvp(f))/dot_general")]
    return MemoryPlanInput(synthetic_plan(values, name="jit_grad"))


class DonateBuffers(MemoryRule):
    """An output with the shape and dtype of a parameter the program does not donate: the program holds both.
    Donating the parameter (``jax.jit(f, donate_argnums=...)``) lets XLA write the output into the parameter's
    buffer, saving the output's bytes. Gradients are not matched to the weights they are the gradients of (the
    caller still needs the weights). Confidence medium: the saving holds only if the caller does not read the
    argument after the call, as for an update step's parameters and optimizer state."""

    id = "donate-buffers"
    title = "No output could reuse a parameter's buffer"
    fix = "donate buffers"
    docs = "https://docs.jax.dev/en/latest/faq.html#buffer-donation"
    examples = (
        Example("update step without donation", _update_step(False), Status.WARN, saving_bytes=2 * 4 << 20),
        Example("update step donating its parameters", _update_step(True), Status.PASS, saving_bytes=0),
        Example("gradients are not matched to weights", _gradients_out(), Status.PASS, saving_bytes=0),
    )

    def saving(self, subject: MemoryPlanInput) -> Saving:
        plan = subject.plan
        aliased_outputs = {out for _, _, out in plan.io_aliases}
        donated = donated_parameters(plan)
        free = [(inst, alloc, name) for inst, alloc, name in parameters(plan) if inst.parameter_number not in donated]
        pairs = []
        skipped_gradients = 0
        for index, shape, inst in plan.outputs():
            if index in aliased_outputs:
                continue
            match = next((p for p in free if same_kind(p[0].shape, shape)), None)
            if match is None:
                continue
            if output_is_gradient(plan, inst):
                skipped_gradients += 1
                continue
            free.remove(match)
            pairs.append((index, shape, match))
        saved = sum(shape.tiled_bytes for _, shape, _ in pairs)
        names = [name or f"parameter {inst.parameter_number}" for _, _, (inst, _, name) in pairs]
        numbers = [inst.parameter_number for _, _, (inst, _, _) in pairs]
        arguments = top_level_names([n for n in names if not n.startswith("parameter ")])
        details = {"parameters": numbers[:50], "parameter_names": names[:50], "outputs": len(pairs),
                   "already_donated": sorted(donated)[:50], "gradients_not_matched": skipped_gradients}
        hint = (f"jax.jit(step, donate_argnames={tuple(arguments)!r})" if arguments
                else f"jax.jit(step, donate_argnums=...)  # flat parameters {numbers[:8]}")
        return Saving(saved, "medium", "a parameter of the output's shape and dtype is not donated; the saving "
                      "holds if the caller does not read it after the call (an update step's params and state)",
                      what=f"donate {len(pairs)} parameter buffer(s) ({', '.join(names[:4])}"
                           f"{', ...' if len(names) > 4 else ''}) the outputs can reuse",
                      details=details,
                      fixes=(f"Donate the arguments the step replaces: {hint}; XLA then writes each new value into "
                             "the old one's buffer",
                             "Do not read a donated argument after the call (JAX deletes it); in Flax/optax train "
                             "steps donate the train state"),
                      commands=(hint,))
