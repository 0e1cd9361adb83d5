"""The fixes a preflight applies and recompiles, each with what it predicts from the baseline's buffer plan.

From outside the program: donating the arguments the step returns in their shape (``donate``), float32
arguments as bfloat16 (``bf16``), each argument sharded over a mesh axis it does not use (``shard``), the
arguments that hold optimizer state (else the largest) in host memory (``offload``). From the program's own
knobs: the factory called with one keyword argument changed (``knob``).

A ``Candidate`` says how to build the changed program; its ``predicted_saving_bytes`` is what the baseline's
figures say it saves (None where they cannot tell: a knob that is not a size). The compile says what it does.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

from tpudoctor.memory.attribution import Attribution, is_optimizer_name
from tpudoctor.preflight.program import KnobChange


@dataclasses.dataclass
class Candidate:
    name: str
    kind: str
    """``outside`` (tpudoctor applies it to the arguments or the jit) or ``knob`` (the factory's keyword)."""
    description: str
    build: Callable[[], tuple[Any, tuple, tuple[int, ...]]]
    """-> (step, args, donate_argnums) of the changed program."""
    predicted_saving_bytes: int | None
    prediction_basis: str


def leaf_device_bytes(leaf) -> int:
    """Bytes one device holds of a ShapeDtypeStruct under its sharding (no tiling padding)."""
    shape = leaf.sharding.shard_shape(leaf.shape) if getattr(leaf, "sharding", None) is not None else leaf.shape
    return math.prod(shape) * leaf.dtype.itemsize


def _leaves(args) -> list:
    import jax

    return jax.tree_util.tree_leaves(args)


def _map(args: tuple, fn) -> tuple:
    import jax

    return tuple(jax.tree_util.tree_map(fn, a) for a in args)


def _path_names(args: tuple) -> list[list[str]]:
    """Per top-level argument, its leaves' key paths (``['mu']['w']``)."""
    import jax

    return [[jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(a)[0]] for a in args]


def output_device_bytes(step, args: tuple) -> int:
    """The step's outputs' device bytes, as they would be placed: an output of an argument's shape and dtype
    sharded as that argument (the compiler propagates it), any other replicated."""
    import jax

    pool: dict[tuple, list[int]] = {}
    for leaf in _leaves(args):
        pool.setdefault((leaf.shape, leaf.dtype), []).append(leaf_device_bytes(leaf))
    total = 0
    for out in _leaves(jax.eval_shape(step, *args)):
        matches = pool.get((out.shape, out.dtype))
        total += matches.pop(0) if matches else math.prod(out.shape) * out.dtype.itemsize
    return total


SHAPE_DIMS = re.compile(r"\[([\d,]*)\]")


def changed_sizes(base_args: tuple, new_args: tuple) -> tuple[set[int], int]:
    """The sizes (global and per device) of the argument dimensions a change alters, and the most dimensions it
    alters in one argument."""
    sizes: set[int] = set()
    most = 0
    for old, new in zip(_leaves(base_args), _leaves(new_args), strict=False):
        if old.shape == new.shape:
            continue
        old_shard = old.sharding.shard_shape(old.shape)
        dims = [d for d in range(min(len(old.shape), len(new.shape))) if old.shape[d] != new.shape[d]]
        most = max(most, len(dims))
        for d in dims:
            sizes |= {old.shape[d], old_shard[d]}
    return sizes, most


def scaled_temporaries(attribution: Attribution, sizes: set[int], most: int, ratio: float,
                       values: list[ValueChange] | None = None, devices: int = 1) -> int:
    """What activations and temporaries save when argument dimensions of ``sizes`` scale by ``ratio``.

    A buffer the program's own values explain (``values``: each value of the step before and after the change,
    ``value_changes``) shrinks as that value does: the attention scores ``[b, h, seq, seq]`` by ratio squared
    under a sequence knob, a ``[batch, heads, ...]`` buffer once under a batch knob even where heads equals the
    batch. Other buffers shrink by ``ratio`` per dimension of ``sizes`` (at most ``most``, the dimensions the change
    alters in one argument: a batch knob scales a buffer once, a width knob a weight twice)."""
    saving = 0.0
    for share in attribution.shares:
        if share.bucket not in ("activations", "temporaries"):
            continue
        dims = SHAPE_DIMS.search(share.shape)
        shape = tuple(int(d) for d in dims[1].split(",")) if dims and dims[1] else ()
        scale = value_scale(shape, share.source, values or [], devices)
        if scale is None:
            matched = sum(1 for d in shape if d in sizes)
            scale = ratio ** min(matched, most)
        saving += share.bytes * (1 - scale)
    return int(saving)


@dataclasses.dataclass(frozen=True)
class ValueChange:
    """One value of the step (a jaxpr equation's output, forward and backward alike), its global shape before and
    after a change, and the source line that made it."""

    old_shape: tuple[int, ...]
    new_shape: tuple[int, ...]
    source: str

    @property
    def scale(self) -> float:
        return math.prod(self.new_shape) / max(1, math.prod(self.old_shape))


def _jaxpr_values(step, args: tuple) -> list[tuple[tuple[int, ...], str]]:
    """Every value the step computes (nested jaxprs: jit, remat, scan bodies, custom derivatives), in order:
    (global shape, ``file:line`` of the user's code that made it)."""
    import jax
    from jax._src import source_info_util  # the user frame of an equation: JAX's own helper
    from jax.extend.core import ClosedJaxpr, Jaxpr

    out: list[tuple[tuple[int, ...], str]] = []

    def walk(jaxpr) -> None:
        for eqn in jaxpr.eqns:
            frame = source_info_util.user_frame(eqn.source_info.traceback) if eqn.source_info.traceback else None
            where = f"{frame.file_name}:{frame.start_line}" if frame is not None else ""
            out.extend((tuple(v.aval.shape), where) for v in eqn.outvars if hasattr(v.aval, "shape"))
            for param in eqn.params.values():
                for sub in param if isinstance(param, (list, tuple)) else (param,):
                    if isinstance(sub, ClosedJaxpr):
                        walk(sub.jaxpr)
                    elif isinstance(sub, Jaxpr):
                        walk(sub)

    walk(jax.make_jaxpr(step)(*args).jaxpr)
    return out


def value_changes(base_step, base_args: tuple, new_step, new_args: tuple) -> list[ValueChange]:
    """The step's values before and after a change, paired in program order (a size knob changes shapes, not the
    program); empty where the two programs differ in structure."""
    try:
        old, new = _jaxpr_values(base_step, base_args), _jaxpr_values(new_step, new_args)
    except Exception:  # noqa: BLE001 - a step JAX cannot trace abstractly: the dimension rule predicts
        return []
    if len(old) != len(new) or any(len(a[0]) != len(b[0]) for a, b in zip(old, new, strict=True)):
        return []
    return [ValueChange(a[0], b[0], a[1]) for a, b in zip(old, new, strict=True) if a[0] != b[0]]


def _shards_of(global_shape: tuple[int, ...], shape: tuple[int, ...], devices: int) -> bool:
    """``shape`` is one device's shard of ``global_shape`` (each dimension divided, the divisions' product a divisor
    of the device count)."""
    if len(global_shape) != len(shape) or any(d <= 0 or g % d for g, d in zip(global_shape, shape, strict=True)):
        return False
    return devices % math.prod(g // d for g, d in zip(global_shape, shape, strict=True)) == 0


def value_scale(shape: tuple[int, ...], source: str, values: list[ValueChange], devices: int) -> float | None:
    """How a buffer of ``shape`` (one device's) made at ``source`` scales: as the program's values of that global
    shape do (those made at the same line first); None where no value explains it or they disagree."""
    if not shape:
        return None
    fitting = [v for v in values if _shards_of(v.old_shape, shape, devices)]
    line = source.rsplit("/", 1)[-1]
    same_line = [v for v in fitting if line and v.source.rsplit("/", 1)[-1] == line]
    scales = {round(v.scale, 9) for v in same_line or fitting}
    return scales.pop() if len(scales) == 1 else None


def argument_and_output_saving(step, base_args: tuple, new_step, new_args: tuple, attribution: Attribution) -> int:
    """The arguments' device bytes a change saves, and the outputs' (the plan's output bytes scaled by what the
    outputs' placement says)."""
    args_delta = (sum(leaf_device_bytes(x) for x in _leaves(base_args))
                  - sum(leaf_device_bytes(x) for x in _leaves(new_args)))
    base_out = output_device_bytes(step, base_args)
    new_out = output_device_bytes(new_step, new_args)
    out_delta = int(attribution.buckets["outputs"] * (1 - new_out / base_out)) if base_out else 0
    return args_delta + out_delta


def float32_saving(attribution: Attribution) -> int:
    """Half the float32 bytes of the peak: what the program computes from bfloat16 arguments is bfloat16 (JAX's
    type promotion), arguments, outputs, activations and temporaries alike; padding and fragmentation apart."""
    half = sum(s.bytes for s in attribution.shares
               if s.dtype == "f32" and s.bucket not in ("padding", "fragmentation")) // 2
    return half + bfloat16_copies_of_parameters(attribution) + masks_beside_float32(attribution)


def masks_beside_float32(attribution: Attribution) -> int:
    """The ``pred`` buffers live at the peak that one instruction makes together with a float32 value of the same
    dimensions: a comparison of that value (a ReLU's mask, ``broadcast_compare_fusion`` of conv_net's last layer,
    1.53 GiB beside its 6.12 GiB activation) kept for the backward pass. With bfloat16 values the compiler makes no
    such mask: the backward compares the kept bfloat16 value where it selects (``compare_select_fusion``), so the
    mask is saved whole (measured: conv_net's bf16 saves 13.83 GiB, 12.30 without the mask)."""
    float32_outputs = {(s.instruction, dims[1]) for s in attribution.shares
                       if s.dtype == "f32" and s.bucket in ("activations", "temporaries")
                       and (dims := SHAPE_DIMS.search(s.shape))}
    return sum(s.bytes for s in attribution.shares
               if s.dtype == "pred" and s.bucket in ("activations", "temporaries")
               and (dims := SHAPE_DIMS.search(s.shape)) and (s.instruction, dims[1]) in float32_outputs)


def bfloat16_copies_of_parameters(attribution: Attribution) -> int:
    """The bfloat16 activations and temporaries of a float32 parameter's shape: the copy the compiler converts a
    float32 argument to for the MXU (a scan's stacked weights, 4 GiB of a 20.76 GiB peak), which a bfloat16
    argument makes unneeded, so the whole copy is saved, not half of it."""
    parameter_dims = {dims[1] for s in attribution.shares
                      if s.bucket == "parameters" and s.dtype == "f32" and (dims := SHAPE_DIMS.search(s.shape))}
    return sum(s.bytes for s in attribution.shares
               if s.bucket in ("activations", "temporaries") and s.dtype == "bf16"
               and (dims := SHAPE_DIMS.search(s.shape)) and dims[1] in parameter_dims)


def donate(step, args: tuple) -> Candidate | None:
    """Donate every top-level argument one of whose leaves the step returns in the same shape and dtype."""
    import jax

    outputs = [(o.shape, o.dtype) for o in _leaves(jax.eval_shape(step, *args))]
    positions, saving = [], 0
    for i, arg in enumerate(args):
        matched = 0
        for leaf in _leaves(arg):
            key = (leaf.shape, leaf.dtype)
            if key in outputs:
                outputs.remove(key)
                matched += leaf_device_bytes(leaf)
        if matched:
            positions.append(i)
            saving += matched
    if not positions:
        return None
    return Candidate(
        "donate", "outside", f"donate argument(s) {', '.join(map(str, positions))} "
                             "(jax.jit(step, donate_argnums=...)): the outputs of their shape reuse their buffers",
        lambda: (step, args, tuple(positions)), saving,
        "the device bytes of the donated leaves the step returns in the same shape and dtype")


def bf16(step, args: tuple, attribution: Attribution) -> Candidate | None:
    """Every float32 argument as bfloat16: what the program computes from them follows the dtype."""
    import jax
    import jax.numpy as jnp

    if not any(leaf.dtype == jnp.float32 for leaf in _leaves(args)):
        return None
    new_args = _map(args, lambda x: jax.ShapeDtypeStruct(x.shape, jnp.bfloat16, sharding=x.sharding)
                    if x.dtype == jnp.float32 else x)
    return Candidate("bf16", "outside", "float32 arguments as bfloat16 (params, optimizer state, inputs)",
                     lambda: (step, new_args, ()), float32_saving(attribution),
                     "half the float32 bytes of the peak (what is computed from them follows the dtype), "
                     "and the bfloat16 copies the compiler made of float32 parameters")


def shard(step, args: tuple, mesh, attribution: Attribution) -> list[Candidate]:
    """Per mesh axis of size > 1: shard each argument leaf that does not use it on its largest dimension that
    divides (FSDP / ZeRO-3 style)."""
    from jax.sharding import NamedSharding, PartitionSpec

    out: list[Candidate] = []
    for axis, size in mesh.shape.items():
        if size < 2:
            continue
        changed = 0

        def reshard(leaf, axis=axis, size=size):
            nonlocal changed
            sharding = leaf.sharding
            if not isinstance(sharding, NamedSharding) or getattr(sharding, "memory_kind", None) == "pinned_host":
                return leaf
            spec = list(sharding.spec) + [None] * (len(leaf.shape) - len(sharding.spec))
            used = {a for s in spec if s is not None for a in (s if isinstance(s, tuple) else (s,))}
            if axis in used:
                return leaf
            shard_shape = sharding.shard_shape(leaf.shape)
            for dim in sorted(range(len(leaf.shape)), key=lambda d: -shard_shape[d]):
                if spec[dim] is None and shard_shape[dim] % size == 0 and shard_shape[dim] >= size:
                    spec[dim] = axis
                    new = leaf.update(sharding=NamedSharding(sharding.mesh, PartitionSpec(*spec),
                                                             memory_kind=sharding.memory_kind))
                    changed += 1
                    return new
            return leaf

        new_args = _map(args, reshard)
        if changed:
            out.append(Candidate(
                f"shard over {axis}", "outside",
                f"shard {changed} argument array(s) over mesh axis {axis!r} ({size} ways), which they did not use, "
                "and the outputs of their shape likewise (FSDP / ZeRO-3)",
                lambda new_args=new_args: (outputs_like_arguments(step, new_args), new_args, ()),
                argument_and_output_saving(step, args, step, new_args, attribution),
                "the arguments' device bytes less their shards', and the outputs of their shape likewise "
                "(temporaries not predicted)"))
    return out


def outputs_like_arguments(step, args: tuple):
    """``step`` with each output of an argument's shape and dtype constrained to that argument's sharding (the
    updated parameters and optimizer state stay sharded as they came in)."""
    import jax

    def pinned(*call_args):
        result = step(*call_args)
        pool: dict[tuple, list] = {}
        for leaf in _leaves(args):
            pool.setdefault((leaf.shape, leaf.dtype), []).append(leaf.sharding)

        def constrain(out):
            matches = pool.get((out.shape, out.dtype))
            return jax.lax.with_sharding_constraint(out, matches.pop(0)) if matches else out

        return jax.tree.map(constrain, result)

    return pinned


def offload(step, args: tuple, attribution: Attribution) -> Candidate | None:
    """The top-level argument that holds optimizer state (by its leaves' names), else the largest, in pinned
    host memory: the compiler brings it to HBM where used."""
    from jax.sharding import NamedSharding

    names = _path_names(args)
    sizes = [sum(leaf_device_bytes(x) for x in _leaves(a)) for a in args]
    optimizer = [i for i, paths in enumerate(names) if paths and any(is_optimizer_name(p) for p in paths)]
    pick = max(optimizer or range(len(args)), key=sizes.__getitem__, default=None)
    if pick is None or not sizes[pick]:
        return None

    def host(leaf):
        if not isinstance(leaf.sharding, NamedSharding):
            return leaf
        return leaf.update(sharding=leaf.sharding.with_memory_kind("pinned_host"))

    import jax

    new_args = tuple(_map((a,), host)[0] if i == pick else a for i, a in enumerate(args))
    on_device = jax.tree.map(lambda leaf: leaf.sharding, args[pick])

    def offloaded(*call_args):
        # the step computes on HBM: the host copy comes in where the compiler schedules the transfer
        moved = jax.device_put(call_args[pick], on_device)
        return step(*call_args[:pick], moved, *call_args[pick + 1:])

    what = "optimizer state" if optimizer else "the largest argument"
    return Candidate("offload", "outside", f"argument {pick} ({what}) in host memory (memory_kind='pinned_host'), "
                                           "brought to HBM in the step",
                     lambda: (offloaded, new_args, ()), None,
                     "not predicted: how long the compiler keeps the copy in HBM is its schedule's choice")


def knob(factory, mesh, change: KnobChange, base_step, base_args: tuple, attribution: Attribution) -> Candidate:
    """The factory with one keyword changed. Predicted for an int knob (a size: batch, sequence, width):
    the arguments' device bytes it changes, and the activations and temporaries scaled by new / old."""
    from tpudoctor.preflight.program import abstract_args

    cache: dict[str, Any] = {}

    def build():
        if "built" not in cache:
            step, args = factory(mesh, **{change.name: change.value})
            cache["built"] = (step, abstract_args(args, mesh), ())
        return cache["built"]

    predicted, basis = None, "a knob that is not a size or a dtype: the compile alone says"
    numeric = (isinstance(change.value, int) and isinstance(change.default, int)
               and not isinstance(change.value, bool) and change.default > 0)
    if numeric:
        try:
            new_step, new_args, _ = build()
        except Exception:  # noqa: BLE001 - the factory refuses the value: the compile step reports it
            return Candidate(f"{change.name}={change.value!r}", "knob", f"the factory's {change.label}", build,
                             None, "the factory did not build with this value")
        sizes, most = changed_sizes(base_args, new_args)
        values = value_changes(base_step, base_args, new_step, new_args)
        predicted = (argument_and_output_saving(base_step, base_args, new_step, new_args, attribution)
                     + scaled_temporaries(attribution, sizes, most, change.value / change.default, values,
                                          mesh.devices.size))
        basis = ("the arguments' and outputs' device bytes it changes; activations and temporaries as the step's "
                 "values of their shape change (traced before and after), else by new/old per dimension of that "
                 "size")
    elif change.default in ("float32", "f32") and change.value in ("bfloat16", "bf16"):
        predicted, basis = float32_saving(attribution), "half the float32 bytes of the peak"
    return Candidate(f"{change.name}={change.value!r}", "knob", f"the factory's {change.label}", build, predicted,
                     basis)
