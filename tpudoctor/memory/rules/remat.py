"""Rematerialise activations: recompute a layer's intermediates in the backward pass (``jax.checkpoint``)."""

from __future__ import annotations

import re

from tpudoctor.findings import Status
from tpudoctor.memory.fix_rule import MemoryExample, MemoryPlanInput, MemoryRule, Saving
from tpudoctor.memory.plan_spec import Value, synthetic_plan

LARGE_FRACTION = 0.05
"""Within one layer, buffers under this share of the layer's activation bytes are neither kept nor saved."""
MATCH_FRACTION = 0.8
"""A period of the peak's activation sequence must match this share of positions to count as layers."""


def _signature(share) -> tuple[str, str]:
    return re.sub(r"\.\d+$", "", share.op_name), share.shape


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
    saving. A scan's stacked residuals (in a while loop) are one period: the stack of carries is kept. Confidence
    medium when layers repeat or residuals are stacked, low otherwise; a layer whose only residual is its input
    (a tanh MLP: XLA keeps each output and recomputes the rest) saves nothing."""

    id = "rematerialise-activations"
    title = "No large activations a checkpoint would recompute"
    fix = "rematerialise activations (jax.checkpoint)"
    docs = "https://docs.jax.dev/en/latest/gradient-checkpointing.html"
    examples = (
        MemoryExample("MLP block keeping three buffers a layer", _mlp(4, (1024, 4096, 4096)), Status.WARN,
                      saving_bytes=4 * 2 * 256 * 4096 * 4),
        MemoryExample("one buffer a layer", _mlp(4, (1024,)), Status.PASS, saving_bytes=0),
        MemoryExample("no backward pass", _forward_only(), Status.PASS, saving_bytes=0),
    )

    def saving(self, subject: MemoryPlanInput) -> Saving:
        attribution = subject.attribution
        shares = attribution.shares_in("activations")
        if not attribution.is_gradient:
            return Saving(0, "high", "the program has no backward pass: nothing to recompute")
        if not shares:
            return Saving(0, "medium", "no forward-pass buffer is live at the peak")
        signatures = [_signature(s) for s in shares]
        period = _period(signatures)
        saved = kept = 0
        for start in range(0, len(shares), period):
            chunk = shares[start:start + period]
            total = sum(s.bytes for s in chunk)
            large = [s.bytes for s in chunk if s.bytes >= LARGE_FRACTION * total]
            if large:
                kept += min(large)
                saved += sum(large) - min(large)
        layers = -(-len(shares) // period)
        stacked = any("/while/" in s.op_name or s.op_name.endswith("/while") for s in shares)
        confidence = "medium" if layers >= 2 or stacked else "low"
        why = (f"{attribution.buckets['activations']:,} bytes of activations at the peak in {layers} repeating "
               f"group(s) of {period} buffer(s){' (scan residuals stacked in a loop)' if stacked else ''}; a "
               "checkpointed layer keeps only its input")
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
