"""Rematerialise activations: recompute a layer's intermediates in the backward pass (``jax.checkpoint``)."""

from __future__ import annotations

import re

from tpudoctor.captures.plan_spec import Value, synthetic_plan
from tpudoctor.findings import Status
from tpudoctor.memory.fix_rule import Example, MemoryPlanInput, MemoryRule, Saving

LARGE_FRACTION = 0.05
"""Within one layer, buffers under this share of the layer's activation bytes are neither kept nor saved."""
MATCH_FRACTION = 0.8
"""A period of the peak's activation sequence must match this share of positions to count as layers."""


def _signature(share) -> tuple[str, str]:
    return re.sub(r"\.\d+$", "", share.op_name), share.shape


def _in_loop(op_name: str) -> bool:
    return "/while/" in op_name or op_name.endswith("/while")


def _stacked(shares: list) -> list:
    """A scan's residuals: the in-loop buffers that lead with the dimension most of their bytes lead with (the
    trip count; the loop's own per-iteration buffers do not have it)."""
    by_leading: dict[str, int] = {}
    for share in shares:
        lead = share.shape.split("[", 1)[-1].split(",", 1)[0]
        if "," in share.shape:
            by_leading[lead] = by_leading.get(lead, 0) + share.bytes
    if not by_leading:
        return []
    lead = max(by_leading, key=by_leading.__getitem__)
    return [s for s in shares if "," in s.shape and s.shape.split("[", 1)[-1].split(",", 1)[0] == lead]


def _period(signatures: list[tuple[str, str]]) -> int:
    """The shortest period the sequence repeats with (a layer's activations), at least twice; else its length."""
    n = len(signatures)
    for p in range(1, n // 2 + 1):
        matches = sum(signatures[i] == signatures[i + p] for i in range(n - p))
        if matches >= MATCH_FRACTION * (n - p):
            return p
    return max(n, 1)


def _mlp(layers: int, per_layer: tuple[int, ...]) -> MemoryPlanInput:
    values = [Value("w", dims=(1024, 1024), kind="parameter", op_name="w"),
              Value("dw", dims=(1024, 1024), kind="output", op_name="jit(f)/transpose(jvp(f))/dot_general")]
    for layer in range(layers):
        for j, width in enumerate(per_layer):
            values.append(Value(f"act{layer}_{j}", dims=(256, width), op_name=f"jit(f)/jvp(f)/op{j}"))
    values.append(Value("cotangent", dims=(256, 1024), op_name="jit(f)/transpose(jvp(f))/mul"))
    return MemoryPlanInput(synthetic_plan(values, name="jit_f"))


def _scan(widths: tuple[int, ...]) -> MemoryPlanInput:
    values = [Value("ws", dims=(8, 1024, 1024), kind="parameter", op_name="ws"),
              Value("dws", dims=(8, 1024, 1024), kind="output", op_name="jit(f)/transpose(jvp(f))/while")]
    values += [Value(f"stack{j}", dims=(8, 256, width), opcode="while", op_name="jit(f)/jvp(f)/while")
               for j, width in enumerate(widths)]
    values.append(Value("carry", dims=(256, 1024), op_name="jit(f)/jvp(f)/while/body/tanh"))
    return MemoryPlanInput(synthetic_plan(values, name="jit_f"))


def _forward_only() -> MemoryPlanInput:
    values = [Value("x", dims=(256, 1024), kind="parameter", op_name="x"),
              Value("h", dims=(256, 4096), op_name="jit(f)/dot_general"),
              Value("y", dims=(256, 1024), kind="output", op_name="jit(f)/tanh")]
    return MemoryPlanInput(synthetic_plan(values, name="jit_f"))


class Rematerialise(MemoryRule):
    """Activations (forward-pass buffers live at the backward peak, see ``tpudoctor.memory.attribution``) that a
    per-layer ``jax.checkpoint`` would recompute instead of holding. The peak's activations, in the order they
    were allocated, repeat with a period (one layer's buffers); a checkpointed layer keeps only its input, taken
    as the smallest of the layer's large buffers (at least ``LARGE_FRACTION`` of its bytes); the others are the
    saving. A scan's residuals (defined in a while loop, each stacked over the layers) are one group: the stack of
    carries is kept. Confidence medium for a scan's stacked residuals, low for unrolled layers; a layer whose
    only residual is its input (a tanh MLP: XLA keeps each output and recomputes the rest) saves nothing. Measured
    on CPU: a scan with ``jax.checkpoint`` on its body saves what this predicts; per-layer checkpoints in an
    unrolled Python loop saved nothing (XLA's CPU scheduler runs the recomputation early)."""

    id = "rematerialise-activations"
    title = "No large activations a checkpoint would recompute"
    fix = "rematerialise activations (jax.checkpoint)"
    docs = "https://docs.jax.dev/en/latest/gradient-checkpointing.html"
    examples = (
        Example("MLP block keeping three buffers a layer", _mlp(4, (1024, 4096, 4096)), Status.WARN,
                      saving_bytes=4 * 2 * 256 * 4096 * 4),
        Example("one buffer a layer", _mlp(4, (1024,)), Status.PASS, saving_bytes=0),
        Example("scan residuals stacked over 8 layers", _scan((1024, 4096, 4096)), Status.WARN,
                      saving_bytes=2 * 8 * 256 * 4096 * 4),
        Example("no backward pass", _forward_only(), Status.PASS, saving_bytes=0),
    )

    def saving(self, subject: MemoryPlanInput) -> Saving:
        attribution = subject.attributed
        shares = attribution.shares_in("activations")
        if not attribution.is_gradient:
            return Saving(0, "high", "the program has no backward pass: nothing to recompute")
        if not shares:
            return Saving(0, "medium", "no forward-pass buffer is live at the peak")
        in_loop = [s for s in shares if _in_loop(s.op_name)]
        unrolled = [s for s in shares if not _in_loop(s.op_name)]
        period = _period([_signature(s) for s in unrolled]) if unrolled else 1
        groups = [unrolled[i:i + period] for i in range(0, len(unrolled), period)]
        stacks = _stacked(in_loop)
        saved = kept = 0
        for group in groups + ([stacks] if stacks else []):
            total = sum(s.bytes for s in group)
            large = [s.bytes for s in group if s.bytes >= LARGE_FRACTION * total or group is stacks]
            if large:
                kept += min(large)
                saved += sum(large) - min(large)
        layers = len(groups) - (1 if in_loop else 0)
        stacked = bool(in_loop)
        confidence = "medium" if stacked else "low"
        why = (f"{attribution.buckets['activations']:,} bytes of activations at the peak: "
               + (f"{len(in_loop)} scan residual(s) stacked over the layers" if stacked else "")
               + (" and " if stacked and unrolled else "")
               + (f"{layers} repeating group(s) of {period} buffer(s)" if unrolled else "")
               + "; a checkpointed layer keeps only its input")
        if unrolled and not stacked:
            why += (" (an unrolled loop: XLA may schedule the recomputation early and save nothing, as it does on "
                    "CPU; a scan over the layers keeps it in the backward pass)")
        return Saving(saved, confidence, why,
                      what=f"checkpoint each layer: recompute {format_count(len(shares) - layers)} activation "
                           f"buffer(s) in the backward pass",
                      details={"activations_bytes": attribution.buckets["activations"], "kept_bytes": kept,
                               "layers": layers, "buffers_per_layer": period, "stacked_in_loop": stacked},
                      fixes=("Wrap each layer in jax.checkpoint (jax.remat): layer = jax.checkpoint(layer); in a "
                             "scan over layers, jax.lax.scan(jax.checkpoint(body), ...)",
                             "Flax: nn.remat(Block); keep the cheap-to-store results with a policy, e.g. "
                             "jax.checkpoint_policies.dots_with_no_batch_dims_saveable"))


def format_count(n: int) -> str:
    return f"{n:,}"
