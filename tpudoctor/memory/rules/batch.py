"""A smaller per-device batch: micro-batches with gradient accumulation in a training program, a smaller serving
batch in one without a backward pass."""

from __future__ import annotations

from collections import Counter

from tpudoctor.captures.plan_spec import Value, synthetic_plan
from tpudoctor.findings import Status
from tpudoctor.memory.fix_rule import Example, MemoryPlanInput, MemoryRule, Saving
from tpudoctor.memory.rules._common import DATA_NAME, live_temporary_shares, parameters

FACTOR = 2
"""The batch is split in two: micro-batches of ceil(batch / 2) and the rest (5 -> 3 and 2)."""


def infer_batch(subject: MemoryPlanInput) -> int | None:
    """The dimension most bytes live at the peak lead with that is also an input's leading dimension (an input
    named like data, ``x`` or ``batch``, where the program has one)."""
    plan = subject.plan
    inputs = [inst for inst, _, name in parameters(plan) if inst.shape.dims]
    data = [inst for inst, _, name in parameters(plan) if inst.shape.dims and DATA_NAME.search(name or "")]
    leading = {inst.shape.dims[0] for inst in (data or inputs)}
    weights: Counter[int] = Counter()
    for bid, size in live_temporary_shares(subject).items():
        dims = plan.buffers[bid].shape.dims
        if dims and dims[0] in leading and dims[0] > 1:
            weights[dims[0]] += size
    return weights.most_common(1)[0][0] if weights else None


def _program(batch: int) -> MemoryPlanInput:
    values = [Value("w", dtype="bf16", dims=(1024, 1024), kind="parameter", op_name="w"),
              Value("x", dtype="bf16", dims=(batch, 1024), kind="parameter", op_name="x"),
              Value("h", dtype="bf16", dims=(batch, 4096), op_name="jit(f)/dot_general"),
              Value("y", dtype="bf16", dims=(batch, 1024), kind="output", op_name="jit(f)/dot_general")]
    return MemoryPlanInput(synthetic_plan(values, name="jit_f"), batch_size=batch)


class SmallerBatch(MemoryRule):
    """Splitting the per-device batch in two shrinks every buffer with a batch dimension to the larger part's share:
    the inputs, the outputs and the buffers live at the peak whose shape has the batch size in it (an even batch
    halves them; 5 becomes 3 and 2, so they keep 3/5). The batch size is the caller's (confidence medium: a
    dimension of the same size that is not the batch would count too), else inferred as the leading dimension of
    most live bytes that an input also leads with (confidence low); unknown where neither tells. In a training
    program (one with a backward pass) accumulating gradients over the micro-batches keeps the global batch; a
    program without one (inference) serves smaller batches."""

    id = "smaller-batch"
    title = "The batch is not what fills memory"
    fix = "a smaller per-device batch"
    keeps_numerics = False
    docs = "https://optax.readthedocs.io/en/latest/api/optimizer_wrappers.html#optax.MultiSteps"
    examples = (
        Example("batch-bound forward", _program(8192), Status.WARN,
                      saving_bytes=(8192 * 1024 * 2 * 2 + 8192 * 4096 * 2) // FACTOR),
        Example("an odd batch keeps its larger part (4097 -> 2049 and 2048)", _program(4097), Status.WARN,
                      saving_bytes=(4097 * 1024 * 2 * 2 + 4097 * 4096 * 2)
                      - (4097 * 1024 * 2 * 2 + 4097 * 4096 * 2) * 2049 // 4097),
        Example("no batch dimension", MemoryPlanInput(synthetic_plan(
            [Value("w", dims=(1024, 1024), kind="parameter", op_name="w"),
             Value("out", dims=(1024, 1024), kind="output", op_name="jit(f)/sub")], name="jit_f")), Status.PASS,
            saving_bytes=0),
    )

    def saving(self, subject: MemoryPlanInput) -> Saving:
        plan = subject.plan
        batch = subject.batch_size
        confidence = "medium"
        if batch is None:
            batch = infer_batch(subject)
            confidence = "low"
        if batch is None:
            return Saving.unknown("no batch size given and none inferred (no live buffer leads with an input's "
                                  "leading dimension): pass the per-device batch size")
        how = "given" if confidence == "medium" else "inferred"
        if batch < FACTOR:
            return Saving(0, confidence, f"batch size {batch} ({how}): there is no smaller batch")
        with_batch = 0
        for inst, alloc, _ in parameters(plan):
            if alloc is not None and alloc.counted and batch in inst.shape.dims:
                with_batch += alloc.size_bytes
        aliased = {out for _, _, out in plan.io_aliases}
        for index, shape, _ in plan.outputs():
            if index not in aliased and batch in shape.dims:  # a donated parameter's bytes are counted above
                with_batch += shape.tiled_bytes
        for bid, size in live_temporary_shares(subject).items():
            if batch in plan.buffers[bid].shape.dims:
                with_batch += size
        larger = -(-batch // FACTOR)  # the larger micro-batch is what the peak holds
        parts = [larger] + [batch // FACTOR] * (FACTOR - 1) if batch % FACTOR else [batch // FACTOR] * FACTOR
        saved = with_batch - with_batch * larger // batch
        split = " and ".join(str(p) for p in parts) if batch % FACTOR else f"{FACTOR} of {larger}"
        why = (f"batch size {batch} ({how}); {with_batch:,} bytes of the peak have it in their shape and shrink to "
               f"{larger}/{batch} of it")
        details = {"batch_size": batch, "batch_size_source": how, "batch_bytes": with_batch,
                   "micro_batches": parts, "gradient": subject.attributed.is_gradient}
        if not subject.attributed.is_gradient:  # inference: nothing to accumulate
            return Saving(saved, confidence, why, details=details,
                          what=f"a smaller serving batch ({batch} -> {larger} per device; the program has no backward "
                               "pass)",
                          fixes=(f"Serve {larger} per device at a time ({batch} as batches of {split}): the same "
                                 "requests in two calls instead of one",
                                 "Or spread the batch over more devices (a larger data axis)"))
        if batch % FACTOR == 0:
            accumulate = (f"Run {FACTOR} micro-batches of {larger} and accumulate gradients "
                          f"(optax.MultiSteps(opt, every_k_schedule={FACTOR})) to keep the global batch")
        else:  # MultiSteps averages its micro-batches' gradients alike: uneven ones need the per-example sum
            accumulate = (f"Run micro-batches of {split} and accumulate the sum of their per-example gradients, "
                          f"divided by {batch} once (weight each by its size: an unweighted mean over uneven "
                          "micro-batches changes the gradient), to keep the global batch")
        return Saving(saved, confidence, why, details=details,
                      what=f"split the per-device batch ({batch} -> micro-batches of {split}) and accumulate "
                           "gradients over them",
                      fixes=(accumulate, "Or spread the batch over more devices (a larger data axis)"))
