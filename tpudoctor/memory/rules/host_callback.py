"""Drop a debug print or host callback that makes the program hold a buffer at its peak."""

from __future__ import annotations

import re

from tpudoctor.captures.plan_spec import Value, synthetic_plan
from tpudoctor.findings import Status
from tpudoctor.memory.fix_rule import Example, MemoryPlanInput, MemoryRule, Saving
from tpudoctor.memory.rules._common import live_temporary_shares

CALLBACK_TARGET = re.compile(r"callback|host_callback|py_?func|outside_compilation", re.IGNORECASE)
"""Custom-call targets of host callbacks: JAX's ``xla_python_cpu_callback`` / ``xla_ffi_python_cpu_callback``
(``jax.debug.print``, ``jax.debug.callback``, ``jax.pure_callback``, ``io_callback``), the GPU and TPU ones,
TensorFlow's ``PyFunc``."""


def is_host_callback(inst) -> bool:
    if inst.opcode == "custom-call" and CALLBACK_TARGET.search(inst.custom_call_target or ""):
        return True
    if inst.opcode in ("send", "outfeed") and (inst.is_host_transfer or inst.opcode == "outfeed"):
        return True
    return inst.opcode == "custom-call" and "callback" in inst.op_name


def _program(callback: bool) -> MemoryPlanInput:
    values = [Value("x", dims=(1024,), kind="parameter", op_name="x"),
              Value("h", dims=(2048, 2048), op_name="jit(f)/exp", operands=("x",))]
    if callback:
        values.append(Value("debug_callback", dtype="tuple", opcode="custom-call", operands=("h",), size_bytes=0,
                            custom_call_target="xla_ffi_python_cpu_callback", op_name="jit(f)/debug_callback"))
    values.append(Value("out", dims=(), kind="output", op_name="jit(f)/reduce_sum", operands=("h",)))
    return MemoryPlanInput(synthetic_plan(values, name="jit_f"))


class HostCallbackPinsBuffer(MemoryRule):
    """A host callback (``jax.debug.print``, ``jax.debug.callback``, ``pure_callback``, an outfeed) reading a
    buffer live at the peak: the buffer must be materialised and held until the callback runs, where without it
    XLA could fuse it into its consumer or free it sooner. The saving is the bytes of the live buffers the
    callbacks read. Confidence medium: another op may still need the buffer."""

    id = "host-callback-pins-buffer"
    title = "No host callback holds a buffer at the peak"
    fix = "drop the debug print / host callback"
    docs = "https://docs.jax.dev/en/latest/debugging/print_breakpoint.html"
    examples = (
        Example("debug callback reads a 16 MiB intermediate", _program(True), Status.WARN,
                      saving_bytes=2048 * 2048 * 4),
        Example("no callback", _program(False), Status.PASS, saving_bytes=0),
    )

    def saving(self, subject: MemoryPlanInput) -> Saving:
        plan = subject.plan
        callbacks = [i for i in plan.instructions.values() if is_host_callback(i)]
        if not callbacks:
            return Saving(0, "high", "the program has no host callback")
        live = live_temporary_shares(subject)
        by_instruction: dict[int, list[int]] = {}
        for bid in live:
            by_instruction.setdefault(plan.buffers[bid].instruction_id, []).append(bid)
        pinned: dict[int, int] = {}
        readers: list[str] = []
        for cb in callbacks:
            for op in cb.operand_ids:
                origin = plan.instructions.get(op)
                for candidate in {op, origin.id if origin is not None else op}:
                    for bid in by_instruction.get(candidate, ()):
                        if bid not in pinned:
                            pinned[bid] = live[bid]
                            readers.append(cb.name)
        saved = sum(pinned.values())
        buffers = [plan.buffers[b] for b in pinned]
        sources = sorted({cb.source for cb in callbacks if cb.source})
        return Saving(saved, "medium" if saved else "high",
                      "host callbacks read these buffers at the peak; without them XLA may fuse or free them "
                      "(another op may still need them)" if saved else
                      f"{len(callbacks)} host callback(s), none reading a buffer live at the peak",
                      what=f"drop {len(set(readers))} host callback(s) reading "
                           f"{', '.join(b.shape.text for b in buffers[:3])} at the peak",
                      details={"callbacks": [cb.name for cb in callbacks][:20], "sources": sources[:20],
                               "pinned_buffers": [b.instruction for b in buffers][:20]},
                      fixes=("Remove jax.debug.print / jax.debug.callback of large arrays from the step (print a "
                             "reduction instead: jax.debug.print('{}', jnp.mean(x)))",
                             "Move host callbacks out of the hot step, or guard them with a flag at trace time"))
