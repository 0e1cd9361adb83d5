"""The compiler's buffer plan (tpudoctor.captures.buffer_plan) and its attribution (tpudoctor.memory.attribution).

Oracles: XLA's own descriptors (the field numbers of ``hlo_schema`` against the ``hlo_pb2`` / ``xla_data_pb2``
TensorFlow ships, read from their serialised descriptors without importing TensorFlow), and
``jax.stages.Compiled.memory_analysis()``: a plan decoded from a real JAX CPU capture adds up to its
argument, output, temp and alias sizes. The real TPU capture of ../shared/data (TPU v6e, host-offloaded
parameters in memory colour 5, T(8,128) layouts) is read too where that folder is present.
"""

from __future__ import annotations

import ast
import glob
import math
from pathlib import Path

import pytest
from shared_data import SHARED_DATA

from tpudoctor.captures import hlo_schema
from tpudoctor.captures.hlo import PlanError, decode_hlo_proto
from tpudoctor.captures.hlo_schema import HEAP_ALLOC, HEAP_FREE, HEAP_SHARE_WITH, message_class
from tpudoctor.captures.hlo_shapes import Shape, tiled_elements
from tpudoctor.captures.plan_spec import Value, synthetic_hlo_proto, synthetic_plan
from tpudoctor.memory.attribution import BUCKETS, attribute, is_backward, is_optimizer_name
from tpudoctor.memory.plan_capture import (
    plan_at,
    plan_for,
    plans_from_xspace,
    program_runs,
    split_event_name,
)

NAMED_FRACTION = 0.95

# --- the descriptor against XLA's ---------------------------------------------------------------------------------

_XLA_NAMES = {  # our top-level subset message -> XLA's (nested) full name
    "FileLocation": "xla.StackFrameIndexProto.FileLocation", "StackFrame": "xla.StackFrameIndexProto.StackFrame",
    "AliasEntryProto": "xla.HloInputOutputAliasProto.AliasEntryProto",
    "BufferAlias": "xla.BufferAssignmentProto.BufferAlias", "Location": "xla.LogicalBufferProto.Location",
    "Assigned": "xla.BufferAllocationProto.Assigned", "HeapEvent": "xla.HeapSimulatorTrace.Event",
}


def _serialized_descriptor(path: Path):
    """The FileDescriptorProto a generated ``*_pb2.py`` registers (its ``AddSerializedFile`` literal)."""
    from google.protobuf import descriptor_pb2

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "AddSerializedFile":
            return descriptor_pb2.FileDescriptorProto.FromString(node.args[0].value)
    raise AssertionError(f"no serialized descriptor in {path}")


def _xla_messages() -> dict[str, object]:
    import importlib.util

    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("TensorFlow (which ships XLA's hlo_pb2) is not installed")
    root = Path(next(iter(spec.submodule_search_locations))) / "compiler" / "xla"
    files = [root / "service" / "hlo_pb2.py", root / "xla_data_pb2.py"]
    if not all(f.is_file() for f in files):
        pytest.skip("this TensorFlow ships no xla/service/hlo_pb2.py")
    out: dict[str, object] = {}

    def walk(prefix: str, messages) -> None:
        for message in messages:
            out[f"{prefix}.{message.name}"] = message
            walk(f"{prefix}.{message.name}", message.nested_type)

    for f in files:
        proto = _serialized_descriptor(f)
        walk(proto.package, proto.message_type)
    return out


def test_every_field_number_is_xlas():
    xla = _xla_messages()
    checked = 0
    for name, fields in hlo_schema.MESSAGES:
        theirs = {f.name: f for f in xla[_XLA_NAMES.get(name, f"xla.{name}")].field}
        for field, number, _, repeated in fields:
            assert field in theirs, f"{name}.{field} is not in XLA's schema"
            assert theirs[field].number == number, f"{name}.{field} is {theirs[field].number} in XLA, not {number}"
            assert (theirs[field].label == 3) == repeated, f"{name}.{field}: repeated differs"
            checked += 1
    assert checked > 80


# --- shapes, tiles, the heap replay --------------------------------------------------------------------------------

def test_tiling_rounds_minor_dimensions_up_to_whole_tiles():
    f32 = Shape("f32", (4096, 3), (1, 0), ((8, 128),))
    assert f32.logical_bytes == 4096 * 3 * 4 and f32.tiled_bytes == 4096 * 128 * 4
    assert Shape("f32", (5, 3), (1, 0), ((8, 128),)).tiled_bytes == 8 * 128 * 4
    bf16 = Shape("bf16", (1000, 100), (1, 0), ((8, 128), (2, 1)))
    assert bf16.tiled_bytes == 1000 * 128 * 2  # (2,1) subdivides the (8,128) tile: no extra
    assert Shape("bf16", (1000, 100), (1, 0), ((16, 128),)).tiled_bytes == 1008 * 128 * 2
    transposed = Shape("f32", (3, 4096), (0, 1), ((8, 128),))  # minor_to_major (0, 1): dim 0 is minor
    assert transposed.physical_dims == (4096, 3) and transposed.tiled_bytes == 4096 * 128 * 4
    assert tiled_elements((7,), ((128,),)) == 128 and tiled_elements((2, 3), ()) == 6
    assert Shape("f32", (64, 256), (1, 0)).text == "f32[64,256]"
    assert f32.text == "f32[4096,3]{1,0:T(8,128)}"


def _plan_with_trace(events, sizes) -> object:
    """A one-allocation temporary heap with the given trace (kind, buffer, canonical)."""
    proto = message_class("HloProto")()
    module = proto.hlo_module
    module.name, module.entry_computation_name = "m", "main"
    comp = module.computations.add(name="main", id=1)
    for i in sizes:
        inst = comp.instructions.add(name=f"v{i}", id=i, opcode="fusion")
        inst.shape.element_type, inst.shape.dimensions[:] = 11, [sizes[i] // 4]
        proto.buffer_assignment.logical_buffers.add(id=i, size=sizes[i]).defined_at.instruction_id = i
    alloc = proto.buffer_assignment.buffer_allocations.add(index=0, size=sum(sizes.values()))
    for i in sizes:
        alloc.assigned.add(logical_buffer_id=i, offset=0, size=sizes[i])
    trace = proto.buffer_assignment.heap_simulator_traces.add(buffer_allocation_index=7)
    for kind, buffer, canonical in events:
        trace.events.add(kind=kind, buffer_id=buffer, share_with_canonical_id=canonical, instruction_name=f"v{buffer}")
    return decode_hlo_proto(proto.SerializeToString())


def test_heap_replay_counts_an_in_place_user_that_shares_a_freed_operand():
    """XLA frees an operand just before its in-place user shares its bytes: the bytes are live again (a replay
    that adds nothing on SHARE_WITH reads a JAX CPU grad's peak 30 % low)."""
    sizes = {1: 100, 2: 100, 3: 50}
    events = [(HEAP_ALLOC, 1, 0), (HEAP_FREE, 1, 0), (HEAP_SHARE_WITH, 2, 1), (HEAP_ALLOC, 3, 0),
              (HEAP_FREE, 2, 0), (HEAP_FREE, 3, 0)]
    plan = _plan_with_trace(events, sizes)
    peak = plan.heap_peaks[0]  # matched to allocation 0 by its buffers, not by buffer_allocation_index 7
    assert peak.live_bytes == 150 and peak.buffer_ids == (2, 3) and peak.instruction == "v3"


def test_heap_replay_frees_shared_bytes_with_the_last_sharer():
    sizes = {1: 100, 2: 100, 3: 10}
    events = [(HEAP_ALLOC, 1, 0), (HEAP_SHARE_WITH, 2, 1), (HEAP_FREE, 1, 0), (HEAP_ALLOC, 3, 0),
              (HEAP_FREE, 2, 0), (HEAP_FREE, 3, 0)]
    peak = _plan_with_trace(events, sizes).heap_peaks[0]
    assert peak.live_bytes == 110 and peak.buffer_ids == (2, 3)


def test_a_proto_without_buffer_assignment_or_garbage_is_a_plan_error():
    proto = message_class("HloProto")()
    proto.hlo_module.name = "jit_f"
    with pytest.raises(PlanError, match="no buffer assignment"):
        decode_hlo_proto(proto.SerializeToString())
    with pytest.raises(PlanError, match="does not decode"):
        decode_hlo_proto(b"\xff\xff\xff\xff")


def test_event_names_split_into_module_and_program_id():
    assert split_event_name("jit_f(6)") == ("jit_f", 6)
    assert split_event_name("jit_f") == ("jit_f", None)


# --- attribution ---------------------------------------------------------------------------------------------------

def test_attribution_names_every_byte_of_a_synthetic_tpu_plan():
    values = [Value("w", dims=(1024, 1024), kind="parameter", op_name="params['w']"),
              Value("mu", dims=(1024, 1024), kind="parameter", op_name="opt_state[0].mu['w']"),
              Value("extra", dims=(256, 256), kind="parameter", op_name="p7"),
              Value("pts", dims=(4096, 3), tiles=((8, 128),), op_name="jit(f)/jvp(f)/mul"),
              Value("g", dims=(1024, 1024), op_name="jit(f)/transpose(jvp(f))/dot_general"),
              Value("gone", dims=(64,), live=False, op_name="jit(f)/jvp(f)/sin"),
              Value("k", dims=(16,), kind="constant"),
              Value("out", dims=(1024, 1024), kind="output", op_name="jit(f)/sub")]
    plan = synthetic_plan(values, fragmentation_bytes=1000)
    a = attribute(plan, optimizer_parameters=(2,), reserved_bytes=plan.peak_bytes + 5000,
                  in_use_bytes=plan.peak_bytes + 3000)
    mib = 1 << 20
    assert a.buckets["parameters"] == 4 * mib
    assert a.buckets["optimizer_state"] == 4 * mib + 256 * 256 * 4  # by name, and parameter 2 by number
    assert a.confidence["optimizer_state"][0] == "high"
    assert a.buckets["activations"] == 4096 * 3 * 4 and a.buckets["padding"] == 4096 * 125 * 4
    assert a.buckets["temporaries"] == 4 * mib and a.buckets["fragmentation"] == 1000
    assert a.buckets["outputs"] == 4 * mib and a.buckets["constants"] == 64
    assert a.buckets["preallocated_unused"] == 2000 and a.buckets["outside_program"] == 3000
    assert a.buckets["other"] == 0 and a.named_fraction == 1.0
    assert sum(a.buckets.values()) == a.total_bytes == plan.peak_bytes + 5000
    assert a.is_gradient and set(a.buckets) == set(BUCKETS)
    frame = a.frame()
    assert set(frame["bucket"]) <= set(BUCKETS) and frame["bytes"].sum() == a.total_bytes


def test_without_a_heap_trace_offsets_split_the_temporary_allocation():
    proto = synthetic_hlo_proto([Value("a", dims=(1000,)), Value("b", dims=(500,)),
                                 Value("o", dims=(4,), kind="output")], fragmentation_bytes=400)
    del proto.buffer_assignment.heap_simulator_traces[:]
    plan = decode_hlo_proto(proto.SerializeToString())
    a = attribute(plan)
    assert a.buckets["temporaries"] == 6000 and a.buckets["fragmentation"] == 400
    assert a.confidence["temporaries"][0] == "low" and a.named_fraction == 1.0


def test_backward_and_optimizer_names():
    assert is_backward("jit(train)/transpose(jvp(loss))/dot_general")
    assert is_backward("gradient_tape/model/dense/MatMul") and not is_backward("jit(f)/jvp(f)/tanh")
    assert is_optimizer_name("opt_state[1][0].mu['dense']['kernel']") and is_optimizer_name("nu['w']")
    assert not is_optimizer_name("params['embed']") and not is_optimizer_name("menu")


# --- real JAX CPU captures -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cpu_capture(tmp_path_factory):
    """A JAX CPU trace of three programs (a grad, a donated update, a scan) and their memory_analysis."""
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")

    def loss(w, x):
        for _ in range(3):
            x = jnp.tanh(x @ w)
        return x.sum()

    def update(p, g):
        return p - 0.1 * g

    def scanned(ws, x):
        return jax.lax.scan(lambda c, w: (jnp.sin(c @ w), None), x, ws)[0].sum()

    w, x = jnp.ones((128, 128)), jnp.ones((32, 128))
    programs = {"jit_loss": (jax.jit(jax.grad(loss)), (w, x)), "jit_update": (jax.jit(update, donate_argnums=0),
                                                                                (w, w)),
                "jit_scanned": (jax.jit(jax.grad(scanned)), (jnp.ones((4, 128, 128)), x))}
    compiled = {name: fn.lower(*args).compile() for name, (fn, args) in programs.items()}
    out = tmp_path_factory.mktemp("memory_plan_trace")
    jax.profiler.start_trace(str(out))
    for name, (_, args) in programs.items():
        jax.block_until_ready(compiled[name](*[jnp.array(a) for a in args]))
    jax.profiler.stop_trace()
    path = glob.glob(f"{out}/**/*.xplane.pb", recursive=True)[0]
    return path, {name: c.memory_analysis() for name, c in compiled.items()}


def test_a_cpu_capture_plan_adds_up_to_memory_analysis(cpu_capture):
    path, analyses = cpu_capture
    plans = plans_from_xspace(path)
    for name, ma in analyses.items():
        plan = plan_for(plans, name=name)
        assert plan is not None, f"{name} not in {sorted(plans)}"
        assert plan.argument_bytes == ma.argument_size_in_bytes
        assert plan.output_bytes == ma.output_size_in_bytes
        assert plan.alias_bytes == ma.alias_size_in_bytes
        assert plan.temp_bytes == ma.temp_size_in_bytes
        total = ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes - ma.alias_size_in_bytes
        assert plan.peak_bytes == total + plan.constant_bytes  # memory_analysis leaves constants out
        assert plan.program_id is not None and plan.event_name == f"{plan.module_name}({plan.program_id})"
        a = attribute(plan)
        assert a.named_fraction >= NAMED_FRACTION and sum(a.buckets.values()) == plan.peak_bytes
    donated = plan_for(plans, name="jit_update")
    assert donated.io_aliases and attribute(donated).buckets["outputs"] < donated.alias_bytes


def test_a_cpu_capture_plan_has_buffers_sources_and_a_peak(cpu_capture):
    path, _ = cpu_capture
    plan = plan_for(plans_from_xspace(path), name="jit_loss")
    frame = plan.buffers_frame()
    assert {"instruction", "opcode", "shape", "dtype", "size_bytes", "op_name", "source", "live_at_peak"} <= set(frame)
    assert frame["source"].str.contains(r"test_memory_plan\.py:\d+").any()
    assert frame["op_name"].str.contains("transpose").any()
    assert set(plan.allocations_frame()["kind"]) >= {"parameter", "output", "temporary"}
    (peak,) = plan.heap_peaks.values()
    assert peak.live_bytes == sum(plan.buffers[b].size_bytes for b in peak.buffer_ids)
    assert frame["live_at_peak"].sum() == len(peak.buffer_ids)
    scan = plan_for(plans_from_xspace(path), name="jit_scanned")
    assert attribute(scan).buckets["activations"] > 0  # the scan's stacked residuals, through the loop's names


def test_the_program_running_at_a_time_is_found_by_its_runs(cpu_capture):
    path, _ = cpu_capture
    plans, runs = plans_from_xspace(path), program_runs(path)
    ran = {r.program_id for r in runs}
    assert {plan_for(plans, name=n).program_id for n in ("jit_loss", "jit_update", "jit_scanned")} <= ran
    run = next(r for r in runs if r.program_id == plan_for(plans, name="jit_update").program_id)
    assert plan_at(plans, runs, (run.start_ps + run.end_ps) // 2).module_name == "jit_update"
    assert plan_at(plans, runs, run.start_ps - 10**15) is None
    with open(path, "rb") as handle:  # the same from the file's bytes
        assert set(plans_from_xspace(handle.read())) == set(plans)


# --- the real TPU capture ------------------------------------------------------------------------------------------

TPU_CAPTURE = SHARED_DATA / "xprof_tpu_inference_2.xplane.pb"


@pytest.mark.needs_shared_data
def test_the_real_tpu_capture_plan():
    if not TPU_CAPTURE.is_file():
        pytest.skip(f"{TPU_CAPTURE} is not here (../shared/data)")
    plans = plans_from_xspace(str(TPU_CAPTURE))
    assert len(plans) == 4
    plan = max(plans.values(), key=lambda p: p.peak_bytes)
    assert plan.module_name == "jit_f" and plan.partitions == 8
    # the parameters live in pinned host memory (colour 5): not part of the HBM peak
    params = [a for a in plan.allocations if a.kind == "parameter"]
    assert params and all(a.color == 5 and not a.counted and a.aliased_with_output for a in params)
    assert any(i.shape.tiles == ((8, 128),) for i in plan.instructions.values())
    for p in plans.values():
        a = attribute(p)
        assert a.named_fraction >= NAMED_FRACTION
    a = attribute(plan)
    assert a.buckets["temporaries"] == 4 * 5 * 1024 * 1024 * 256 * 4 and a.buckets["fragmentation"] == 98304
    runs = program_runs(str(TPU_CAPTURE))
    run = next(r for r in runs if r.program_id == plan.program_id)
    assert run.line == "XLA Modules" and run.plane.startswith("/device:TPU:")
    assert plan_at(plans, runs, run.start_ps + 1, plane=run.plane) is plan
    scalar = next(p for p in plans.values() if p.module_name == "jit_broadcast_in_dim")
    assert attribute(scalar).buckets["padding"] == 508  # an f32[] parameter in a 512-byte tiled allocation
    assert math.isclose(sum(attribute(scalar).buckets.values()), scalar.peak_bytes)
