"""Fix TPU tiling padding: a small minor dimension padded to a whole tile."""

from __future__ import annotations

from tpudoctor.captures.hlo_shapes import Shape
from tpudoctor.captures.plan_spec import Value, synthetic_plan
from tpudoctor.findings import Status
from tpudoctor.memory.fix_rule import Example, MemoryPlanInput, MemoryRule, Saving

SMALL_MINOR = 128
"""A minor dimension under a lane tile (128 on TPU) pads."""


def alternative_bytes(shape: Shape) -> int:
    """Bytes of the same elements with the two minor dimensions swapped (``[N, 3]`` stored as ``[3, N]``) under
    the same tiles."""
    dims = shape.physical_dims
    if len(dims) < 2:
        return shape.tiled_bytes
    swapped = Shape(shape.dtype, dims[:-2] + (dims[-1], dims[-2]), tuple(range(len(dims)))[::-1], shape.tiles,
                    shape.element_bits)
    return swapped.tiled_bytes


def _program(tiled: bool) -> MemoryPlanInput:
    tiles = ((8, 128),) if tiled else ()
    values = [Value("points", dims=(65536, 3), kind="parameter", op_name="points", tiles=tiles),
              Value("w", dims=(1024, 1024), kind="parameter", op_name="w", tiles=tiles),
              Value("h", dims=(65536, 3), op_name="jit(f)/mul", tiles=tiles),
              Value("out", dims=(1024, 1024), kind="output", op_name="jit(f)/add", tiles=tiles)]
    return MemoryPlanInput(synthetic_plan(values, name="jit_f"))


class TilingPadding(MemoryRule):
    """Buffers whose minor dimension is smaller than a tile (TPU lays f32 out in (8, 128) tiles, bf16 in (16,
    128)): an f32[N, 3] holds N x 128 elements, 42x its data. The saving is each padded buffer's bytes less those
    of the same data with its two minor dimensions swapped (``[3, N]``), for the parameters, outputs and buffers
    live at the peak. Only a TPU capture's layouts carry tiles: elsewhere the confidence is unknown."""

    id = "tiling-padding"
    title = "No buffer is mostly tile padding"
    fix = "make the small dimension major (fix tiling padding)"
    docs = "https://cloud.google.com/tpu/docs/performance-guide#consequences_of_tiling"
    examples = (
        Example("f32[65536, 3] under T(8,128)", _program(True), Status.WARN,
                      saving_bytes=2 * (65536 * 128 * 4 - 8 * 65536 * 4)),
        Example("CPU layout: no tiles", _program(False), Status.PASS, saving_bytes=0),
    )

    def saving(self, subject: MemoryPlanInput) -> Saving:
        plan = subject.plan
        if not any(i.shape.tiles for i in plan.instructions.values()):
            return Saving.unknown("the layouts carry no tiles (a CPU or GPU program): only a TPU capture tells "
                                  "tiling padding")
        attribution = subject.attributed
        padded: dict[int, int] = {}
        for share in attribution.shares_in("padding"):
            buffer = plan.buffers.get(share.buffer_id) if share.buffer_id is not None else None
            if buffer is None or buffer.id in padded:
                continue
            dims = buffer.shape.physical_dims
            if not dims or dims[-1] >= SMALL_MINOR:
                continue
            held = buffer.size_bytes
            padded[buffer.id] = max(0, held - alternative_bytes(buffer.shape))
        saved = sum(padded.values())
        shapes = [plan.buffers[b].shape.text for b in sorted(padded, key=lambda b: -padded[b])][:5]
        return Saving(saved, "high",
                      "tiled sizes from the buffers' layouts; the swapped layout is computed with the same tiles"
                      if saved else "no buffer with a small minor dimension pads at the peak",
                      what=f"store {', '.join(shapes[:3])} with the small dimension major",
                      details={"padded_buffers": shapes, "padding_bytes": attribution.buckets["padding"]},
                      fixes=("Keep small feature dimensions major: store [N, 3] as [3, N] (transpose once, outside "
                             "the step), or pack several small arrays into one of 128 features",
                             "Pad a small minor dimension to a multiple of 128 yourself only if the padding is "
                             "used (e.g. concatenate features)"))
