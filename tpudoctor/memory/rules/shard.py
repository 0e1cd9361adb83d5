"""Shard replicated parameters and optimizer state along a mesh axis they do not use."""

from __future__ import annotations

from tpudoctor.captures.plan_spec import Value, synthetic_plan
from tpudoctor.findings import Status
from tpudoctor.memory.fix_rule import Example, MemoryPlanInput, MemoryRule, Saving
from tpudoctor.memory.rules._common import DATA_NAME, parameters

MIN_DIMS = 2
"""Vectors (biases, norms' scales) are left replicated: sharding them saves little and costs collectives."""


def _program(sharding, partitions: int, mesh=None) -> MemoryPlanInput:
    rows = 2048 if partitions > 1 else 4096  # the plan's shapes are one device's shard
    values = [Value("w", dims=(rows, 4096), kind="parameter", op_name="params['w']", sharding=sharding),
              Value("x", dims=(64, 4096), kind="parameter", op_name="x",
                    sharding=("other", (2, 1, 2), True) if partitions > 1 else None),
              Value("y", dims=(64, 4096), kind="output", op_name="jit(f)/dot_general")]
    return MemoryPlanInput(synthetic_plan(values, name="jit_f", partitions=partitions), mesh=mesh)


class ShardUnusedAxis(MemoryRule):
    """Parameters (weights, optimizer state) held whole on several devices: a tiled sharding that replicates on
    its last tile dimension (devices along a mesh axis the value does not use) or a replicated one on a
    multi-device program. Sharding a parameter along that axis divides it by the axis size: the saving is each
    such parameter's bytes (one device's shard, as the plan holds it) x (1 - 1/replication). Vectors and
    arguments named like data (``x``, ``batch``, ``tokens``, ...) are left out. Confidence high where the shardings are in the plan; without
    them the program's device count (or the caller's mesh) is needed: unknown for a one-device capture with no
    mesh."""

    id = "shard-unused-mesh-axis"
    title = "No large parameter is replicated along a mesh axis"
    fix = "shard along an unused mesh axis"
    docs = "https://docs.jax.dev/en/latest/notebooks/Distributed_arrays_and_automatic_parallelization.html"
    examples = (
        Example("weights replicated over the model axis", _program(("other", (2, 1, 2), True), 4),
                      Status.WARN, saving_bytes=4096 * 4096 * 4 // 2 // 2),
        Example("fully sharded", _program(("other", (2, 2), False), 4), Status.PASS, saving_bytes=0),
        Example("one device, no mesh", _program(None, 1), Status.PASS, saving_bytes=0),
        Example("one device", _program(None, 1, mesh={"data": 1}), Status.PASS, saving_bytes=0),
    )

    def saving(self, subject: MemoryPlanInput) -> Saving:
        plan = subject.plan
        devices = subject.devices
        has_shardings = any(inst.sharding is not None for inst, _, _ in parameters(plan))
        if devices is None and not has_shardings:
            return Saving.unknown("the program runs on one device and no mesh is given: pass the mesh (axis "
                                  "sizes) to judge what sharding would save")
        if devices == 1 and not has_shardings:
            return Saving(0, "high", "one device: nothing to shard across")
        chosen = []
        for inst, alloc, name in parameters(plan):
            if alloc is None or not alloc.counted or len(inst.shape.dims) < MIN_DIMS or DATA_NAME.search(name or ""):
                continue
            sharding = inst.sharding
            replication = sharding.replication if sharding is not None else devices
            if replication is None:
                replication = devices
            if replication is None or replication <= 1:
                continue
            chosen.append((inst, alloc, name, replication))
        saved = sum(alloc.size_bytes - alloc.size_bytes // r for _, alloc, _, r in chosen)
        axes = sorted({r for *_, r in chosen})
        mesh_axes = [axis for axis, size in (subject.mesh or {}).items() if int(size) in axes]
        names = [name or f"parameter {inst.parameter_number}" for inst, _, name, _ in chosen]
        confidence = "high" if has_shardings else "medium"
        why = ("the parameters' shardings replicate them on several devices" if has_shardings else
               f"no sharding in the plan: each parameter taken as replicated on all {devices} devices")
        return Saving(saved, confidence, why,
                      what=f"shard {len(chosen)} replicated parameter(s) ({', '.join(names[:4])}"
                           f"{', ...' if len(names) > 4 else ''}) along the axis of size {axes[0] if axes else '?'}"
                           + (f" ({', '.join(mesh_axes)})" if mesh_axes else ""),
                      details={"parameters": [i.parameter_number for i, *_ in chosen][:50],
                               "parameter_names": names[:50], "replication": axes, "mesh_axes": mesh_axes},
                      fixes=("Add the unused mesh axis to the parameters' PartitionSpec, e.g. P('data', None) -> "
                             "P('data', 'model') (or FSDP: shard weights and optimizer state over the data axis "
                             "too)",
                             "MaxText: add the axis to the logical axis rules of the weights (e.g. "
                             "ici_fsdp_parallelism)"))
