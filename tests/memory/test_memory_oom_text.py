"""The OOM text forms XLA and libtpu print, and memory_analysis() output (tpudoctor.logs.oom), one
test per form on the real listings in tests/data/memory (manifest.toml: the thread each comes from)."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys

import pytest
from paths import REPO, TESTS

from tpudoctor.logs.oom import parse_memory_analysis, parse_oom_report, parse_oom_reports
from tpudoctor.logs.oom_report import CompiledMemoryStats, parse_size
from tpudoctor.logs.prefixes import log_prefix, payload, program_line

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA = TESTS / "data" / "memory"
G, M, K = 1 << 30, 1 << 20, 1 << 10


def _report(name: str):
    reports = parse_oom_reports((DATA / name).read_text())
    assert len(reports) == 1, reports
    return reports[0]


def _close(value: int | None, printed: float, unit: int) -> bool:
    """``value`` is the printed figure (two decimals of its unit)."""
    return value is not None and abs(value - printed * unit) <= 0.005 * unit


def test_manifest_names_every_file_and_the_copies_are_byte_for_byte():
    manifest = tomllib.loads((DATA / "manifest.toml").read_text())["text"]
    listed = {entry["file"] for entry in manifest}
    assert listed == {path.name for path in DATA.iterdir() if path.name != "manifest.toml"}
    for entry in manifest:
        if entry["copied"]:
            assert (DATA / entry["file"]).read_bytes() == (REPO / entry["copied"]).read_bytes(), entry["file"]
        assert entry["url"].startswith("https://github.com/") or entry["file"].startswith("jax_cpu")


def test_header_ran_out_of_memory_in_memory_space_hbm():
    report = _report("easydel_78_compile_hbm_header.log")
    header = report.header
    assert header.memory_space == "hbm" and header.at_compile and header.status == "RESOURCE_EXHAUSTED"
    assert _close(header.used_bytes, 21.90, G) and _close(header.capacity_bytes, 7.48, G)
    assert _close(header.exceeded_bytes, 14.42, G)
    assert header.line.startswith("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile")
    assert [r.what for r in report.reconciliations] == ["used hbm = capacity + exceeded"]
    assert report.problems == []


def test_total_hbm_usage_with_an_unknown_size_item_and_tf_status_line():
    report = _report("torchxla_pr1926_hbm_unknown_arguments.log")
    assert report.header.status == "Resource exhausted" and not report.header.at_compile
    assert _close(report.header.exceeded_bytes, 17.02, M)  # 8.00G - 7.98G, rounded: within the printed digits
    total = report.total
    assert total.kind == "total" and total.at_least and total.memory_space == "hbm" and _close(total.total_bytes,
                                                                                               8.02, G)
    assert [(item.name, item.bytes) for item in total.items] == [
        ("reserved", 17 * M), ("program", 8 * G), ("arguments", None)]
    assert report.problems == [] and len(report.reconciliations) == 2


def test_program_hbm_requirement_breakdown_and_output_size():
    report = _report("easydel_166_compile_hbm_report.log")
    program = report.program
    assert program.kind == "program" and not program.at_least and _close(program.total_bytes, 63.80, G)
    assert [item.name for item in program.items] == ["global", "scoped", "HLO temp"]
    temp = program.item("HLO temp")
    assert (temp.utilization_percent, temp.fragmentation_percent) == (100.0, 0.3)
    assert _close(temp.unpadded_bytes, 63.58, G) and _close(temp.padded_bytes, 63.58, G)
    assert _close(temp.fragmentation_bytes, 210.89, M)
    assert (report.output.bytes, report.output.shared_with_arguments_bytes) == (0, 0)
    assert [(item.name, item.bytes) for item in report.total.items] == [
        ("reserved", parse_size("1.25G")), ("program", parse_size("63.80G")), ("arguments", 0)]
    assert report.problems == []
    assert {r.what for r in report.reconciliations} >= {
        "Total hbm usage >= 65.05G: sum of its items", "Program hbm requirement 63.80G: sum of its items",
        "HLO temp = padded + fragmentation",
        "Total hbm usage >= 65.05G: its program item = Program hbm requirement 63.80G"}


def test_largest_program_allocations_in_hbm_with_op_source_line_and_shape():
    report = _report("easydel_166_compile_hbm_report.log")
    first, second = report.allocations
    assert (first.rank, first.memory_space, first.size_bytes, first.unpadded_bytes) == (1, "hbm", 2 * G, 2 * G)
    assert first.op_name.startswith("jit(casual_language_model_train_step)/jit(main)/jvp(FlaxFalconForCausalLMModule)")
    assert first.op_name.endswith("preferred_element_type=bfloat16]")  # spaces inside the quotes are kept
    assert first.source == "/home/air/workspace/EasyDel/src/easydel/modules/attention_module.py:1059"
    assert (first.shape, first.dtype, first.dims) == ("f32[32,4096,4096]{1,2,0:T(8,128)}", "f32", (32, 4096, 4096))
    assert first.shape_bytes == 2 * G and first.padding_bytes is None and first.allocation_type == "HLO temp"
    assert first.xla_label.startswith("fusion.1265.remat3 = fusion(custom-call.224")
    # the excerpt ends at the second entry's size
    assert (second.rank, second.size_bytes, second.shape, second.op_name) == (2, 2 * G, None, None)
    assert report.listed_allocation_bytes == 4 * G


def test_allocations_with_padding_and_old_tf_operator_attributes():
    report = _report("flowpm_27_compile_padding_reconstructed.log")
    (allocation,) = report.allocations
    assert (allocation.op_type, allocation.op_name, allocation.source) == (
        "FloorMod", "slicewise_79/cic_update/FloorMod", None)
    assert (allocation.size_bytes, allocation.unpadded_bytes, allocation.padding_bytes) == (32 * G, G, 31 * G)
    assert allocation.padding_expansion == 32.0 and allocation.shape_bytes == G
    assert report.header.at_compile and report.header.status is None  # "Compilation failure: Ran out of memory..."
    assert report.output.bytes is None  # "Output size unknown."
    assert report.total.item("arguments").bytes is None and report.problems == []


def test_three_allocations_each_reconciled_with_its_shape():
    report = _report("lwm_60_compile_allocations_reconstructed.log")
    assert [(a.rank, a.size_bytes, a.dtype, a.source) for a in report.allocations] == [
        (1, 8 * G, "f32", "/home/lwm/lwm/llama.py:1021"), (2, 4 * G, "bf16", "/home/lwm/lwm/llama.py:588"),
        (3, G, "s32", None)]
    shape_checks = [r for r in report.reconciliations if "bytes of" in r.what]
    assert len(shape_checks) == 3 and all(r.ok and r.difference_bytes == 0 for r in shape_checks)
    assert report.problems == []


def test_runtime_reservation_failure_with_its_capacity_table_and_a_listing_that_does_not_add_up():
    report = _report("torchxla_1735_runtime_reserve_report.log")
    reservation = report.reservation
    assert _close(reservation.requested_bytes, 3.95, G) and _close(reservation.free_bytes, 1.92, G)
    assert reservation.reserved_bytes == 0 and reservation.capacity_bytes == 8 * G
    assert reservation.table == {"Top-of-Memory reserved": 554_696_704, "Currently allocated": 6_532_939_776,
                                 "Program requirement": 4_237_689_856, "Available after request": -2_735_391_744}
    capacity = next(r for r in report.reconciliations if r.what.startswith("HBM capacity"))
    assert capacity.ok and capacity.difference_bytes == 0  # exact bytes: 8 GiB to the byte
    assert report.header is None
    assert [item.name for item in report.total.items] == [
        "reserved(Infeed/Outfeed/Continuations)", "heap allocations (without fragmentation)", "program"]
    assert report.total.item("reserved").bytes == parse_size("529.00M")
    assert report.heap_status.items[0].name == "Max free chunk" and report.heap_status.items[0].fragmentation_percent == 0
    assert [(i.name, i.utilization_percent) for i in report.persistent.items] == [("arguments", 89.4), ("output", 71.6)]
    # the real listing: 'Program hbm requirement 4.34G' whose items add up to 3.95G (-9.1 %), reported
    (problem,) = report.problems
    assert problem.what == "Program hbm requirement 4.34G: sum of its items"
    assert problem.difference_share == pytest.approx(-0.0905, abs=0.001)


def test_runtime_allocation_failure_with_and_without_fragmentation():
    trax = _report("trax_431_runtime_allocate_fragmentation.log").allocation_failure
    assert (trax.requested_bytes, trax.free_bytes, trax.largest_free_bytes, trax.device) == (
        parse_size("31.06M"), parse_size("58.64M"), parse_size("30.56M"), "0x0x0_HBM0")
    colab = _report("colabtools_5126_runtime_allocate.log").allocation_failure
    assert (colab.requested_bytes, colab.free_bytes, colab.largest_free_bytes) == (
        parse_size("129.50M"), parse_size("78.17M"), None)


def test_compiled_memory_analysis_as_jax_prints_it():
    (stats,) = parse_memory_analysis((DATA / "jax_cpu_memory_analysis.txt").read_text())
    assert isinstance(stats, CompiledMemoryStats)
    assert stats.get("argument_size_in_bytes") == 786432 and stats.get("output_size_in_bytes") == 512
    assert len(stats.fields) == 10 and stats.device_bytes == 786432 + 512 and stats.host_bytes == 0


def test_compiled_memory_analysis_one_field_a_line():
    text = "\n".join(["# CompiledMemoryStats(", "#     generated_code_size_in_bytes=100,",
                      "#     argument_size_in_bytes=4096,", "#     output_size_in_bytes=2048,",
                      "#     alias_size_in_bytes=2048,", "#     temp_size_in_bytes=512)"])
    (stats,) = parse_memory_analysis(text)
    assert stats.device_bytes == 100 + 4096 + 2048 - 2048 + 512


@pytest.mark.slow
def test_memory_analysis_printed_live_by_jax_reads_back_as_its_attributes():
    pytest.importorskip("jax", reason="JAX is not installed (test extra)")
    script = (
        "import jax, jax.numpy as jnp\n"
        "c = jax.jit(lambda a, b: jnp.tanh(a @ b).sum(0), donate_argnums=(0,)).lower("
        "jnp.ones((128, 128)), jnp.ones((128, 64))).compile()\n"
        "m = c.memory_analysis()\n"
        "print(m)\n"
        "print({n: getattr(m, n) for n in dir(m) if n.endswith('_in_bytes')})\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    printed, attributes = done.stdout.strip().splitlines()[-2:]
    (stats,) = parse_memory_analysis(printed)
    expected = ast.literal_eval(attributes)  # a dict of ints printed by the child above
    assert stats.fields == {name: value for name, value in expected.items() if name in stats.fields}
    assert stats.get("argument_size_in_bytes") == 128 * 128 * 4 + 128 * 64 * 4


def test_a_listing_off_its_header_by_more_than_one_percent_is_reported():
    text = ("Program hbm requirement 10.00G:\n"
            "    global            1.00G\n"
            "    HLO temp          8.00G (50.0% utilization: Unpadded (4.00G) Padded (4.00G), 10.0% fragmentation (1.00G))\n")
    report = parse_oom_report(text)
    assert [(r.what, r.ok) for r in report.reconciliations] == [
        ("Program hbm requirement 10.00G: sum of its items", False), ("HLO temp = padded + fragmentation", False)]
    assert report.problems[0].difference_bytes == -G and report.problems[0].difference_share == pytest.approx(-0.1)


def test_two_reports_in_one_log_and_text_without_one():
    one = (DATA / "easydel_78_compile_hbm_header.log").read_text()
    two = (DATA / "trax_431_runtime_allocate_fragmentation.log").read_text()
    reports = parse_oom_reports(one + "\n" + two)
    assert [(r.header is not None, r.allocation_failure is not None) for r in reports] == [(True, False), (False, True)]
    assert parse_oom_reports("step 10 loss 1.5\nall good\n") == []


@pytest.mark.parametrize(("text", "expected"), [
    ("0B", 0), ("4.0K", 4096), ("256.0K", 262144), ("530.00M", 530 * M), ("1.25G", int(1.25 * G)),
    ("-2.55G", -int(round(2.55 * G))), ("2.5GiB", int(2.5 * G)), ("17", 17)])
def test_sizes_are_1024_based_as_xla_prints_them(text, expected):
    assert parse_size(text) == expected


# --- verbatim listings copied from the threads themselves (manifest.toml: url and what was cut) ---------------------

def _header_is(report, space: str, used: float, capacity: float, exceeded: float, units: tuple[int, int, int]):
    header = report.header
    assert header.memory_space == space
    assert _close(header.used_bytes, used, units[0]) and _close(header.capacity_bytes, capacity, units[1])
    assert _close(header.exceeded_bytes, exceeded, units[2])


def test_every_thread_listing_reconciles_within_one_percent_of_its_headers():
    manifest = tomllib.loads((DATA / "manifest.toml").read_text())["text"]
    threads = [e for e in manifest if e["verbatim"] and e["url"]]
    assert len(threads) >= 17 and len({e["url"] for e in threads}) == len(threads)
    for entry in threads:
        reports = parse_oom_reports((DATA / entry["file"]).read_text())
        assert reports, entry["file"]  # the logs that repeat one failure hold several reports (their tests below)
        for report in reports:
            problems = [r.what for r in report.problems]
            if entry["file"] == "torchxla_1735_runtime_reserve_report.log":  # its real listing does not add up
                assert problems == ["Program hbm requirement 4.34G: sum of its items"]
            else:
                assert problems == [], entry["file"]
                assert all(abs(r.difference_share) <= 0.01 or r.ok for r in report.reconciliations), entry["file"]


def test_easydel_142_full_compile_report_with_arguments_and_output():
    report = _report("easydel_142_compile_hbm_report.log")
    _header_is(report, "hbm", 30.21, 15.48, 14.73, (G, G, G))
    assert report.header.at_compile and report.header.line.startswith("XlaRuntimeError: RESOURCE_EXHAUSTED")
    assert [(i.name, i.bytes) for i in report.total.items] == [
        ("reserved", 530 * M), ("program", parse_size("14.31G")), ("arguments", parse_size("15.90G"))]
    assert (report.output.bytes, report.output.shared_with_arguments_bytes) == (K, 0)
    assert [i.name for i in report.program.items] == ["global", "scoped", "HLO temp"]
    (first,) = report.allocations
    assert first.dtype == "bf16" and first.dims == (256000, 3072) and first.source == "/tmp/ipykernel_1363/19855715.py:3"
    assert first.xla_label == "convert.15982 = convert(param.72)" and first.allocation_type == "HLO temp"
    assert report.problems == [] and len(report.reconciliations) == 7


def test_trax_533_runtime_report_with_padding_and_no_operator():
    report = _report("trax_533_runtime_hbm_report_padding.log")
    _header_is(report, "hbm", 14.93, 8.00, 6.93, (G, G, G))
    assert not report.header.at_compile and report.header.status == "Resource exhausted"
    assert report.total.item("arguments").bytes is None and report.output.bytes is None
    temp = report.program.item("HLO temp")
    assert temp.utilization_percent == 98.3 and _close(temp.fragmentation_bytes, 7.25, M)
    (first,) = report.allocations
    assert first.op_name is None and first.shape_bytes == 512 * 100 * 30000 * 4
    assert _close(first.padding_bytes, 250.62, M) and first.padding_expansion == 1.0
    assert report.problems == []


def test_tensorflow_30803_compilation_failure_with_64x_padding():
    report = _report("tensorflow_30803_compile_hbm_padding.log")
    _header_is(report, "hbm", 27.90, 16.00, 11.90, (G, G, G))
    assert report.header.at_compile and report.header.status is None  # 'Compilation failed: Compilation failure:'
    temp = report.program.item("HLO temp")
    assert (temp.utilization_percent, temp.unpadded_bytes, temp.fragmentation_percent) == (5.6, None, 0.0)
    (first,) = report.allocations
    assert (first.op_type, first.op_name) == ("CrossReplicaSum", "tpu_140280287273760/CrossReplicaSum")
    assert first.unpadded_bytes == first.shape_bytes == 128 * M and first.padding_expansion == 64.0
    assert report.problems == []


def test_flax_1733_listing_pasted_without_its_header():
    report = _report("flax_1733_hbm_usage_no_header.log")
    assert report.header is None and _close(report.total.total_bytes, 11.47, G)
    temp = report.program.item("HLO temp")
    assert temp.utilization_percent == 1.2 and _close(temp.unpadded_bytes, 140.25, M) and temp.fragmentation_bytes == 0
    (first,) = report.allocations  # the excerpt ends at its size
    assert _close(first.size_bytes, 8.77, G) and first.shape is None
    assert report.problems == [] and len(report.reconciliations) == 4


def test_xla_gpu_buffer_assignment_stats_reconcile_with_their_total():
    report = _report("afprofile_8_gpu_buffer_assignment_stats.log")
    assert report.header is None and report.allocation_failure.requested_bytes == 4770354232
    stats = report.buffer_assignment
    assert stats.kind == "buffer_assignment" and _close(stats.total_bytes, 14.44, G)
    assert [i.name for i in stats.items] == [
        "parameter allocation", "constant allocation", "maybe_live_out allocation", "preallocated temp allocation",
        "total allocation", "total fragmentation"]
    assert stats.item("constant").bytes == parse_size("48.5KiB") and stats.item("total fragmentation").detail == "(4.60%)"
    (check,) = report.reconciliations
    assert check.what == "BufferAssignment total allocation: sum of its allocations" and check.ok
    assert abs(check.difference_share) < 0.001


def test_xla_gpu_peak_buffers_with_operator_and_entry_parameter():
    report = _report("jax_13428_gpu_buffer_assignment_peak_buffers.log")
    assert report.allocation_failure.requested_bytes == 6291456 == 6 * M
    assert report.buffer_assignment.total_bytes == 12 * M
    first, second = report.allocations
    assert (first.rank, first.memory_space, first.size_bytes, first.xla_label) == (1, "device", 6 * M, "concatenate")
    assert first.source == "/media/gccrcv/Data/Opensources/multinerf/internal/models.py:689"
    assert first.op_name == "jit(concatenate)/jit(main)/concatenate[dimension=0]" and first.dims == (4096, 128, 3)
    assert (second.size_bytes, second.shape, second.allocation_type) == (384 * K, "f32[256,128,3]", "parameter")
    assert [r.what for r in report.reconciliations] == [
        "buffer 1: size = bytes of f32[4096,128,3]", "buffer 2: size = bytes of f32[256,128,3]",
        "BufferAssignment total allocation: sum of its allocations"]
    assert all(r.difference_bytes == 0 for r in report.reconciliations)


def test_headers_of_other_memory_spaces_and_tf_log_lines():
    tpu598 = _report("tensorflow_tpu_598_compile_hbm_header.log")
    _header_is(tpu598, "hbm", 18.56, 16.00, 2.56, (G, G, G))
    assert tpu598.header.at_compile and tpu598.header.status == "Resource exhausted"
    assert tpu598.header.line.startswith("W1110 07:24:24.387306")
    vmem = _report("torchxla_9524_compile_vmem_header.log")
    _header_is(vmem, "vmem", 32.42, 16.00, 16.42, (M, M, M))  # the thread's line ends without its period
    smem = _report("vllm_8318_compile_smem_header.log")
    assert smem.header.memory_space == "smem" and smem.header.used_bytes == smem.header.capacity_bytes == M
    assert smem.header.exceeded_bytes == parse_size("1.7K")  # 1.00M + 1.7K is 1.00M at the digits printed
    for report in (tpu598, vmem, smem):
        assert [r.what for r in report.reconciliations] == [
            f"used {report.header.memory_space} = capacity + exceeded"] and report.problems == []


# --- listings printed one log line at a time, each line with its prefix (manifest.toml: "prefixes") ---------------

TORCHPRIME = "torchprime_28_host_listing_glog_prefixed.log"


def _without(text: str, prefix_end: str) -> str:
    """The lines of ``text`` as the program wrote them, cut by hand after ``prefix_end`` (and its one space)."""
    lines = []
    for line in text.split("\n"):
        head, found, rest = line.partition(prefix_end)
        lines.append((rest[1:] if rest.startswith(" ") else rest) if found else head)
    return "\n".join(lines)


def test_log_prefix_keeps_what_follows_the_bracket_exactly():
    assert log_prefix("E0110 18:36:27.929437    1590 2a886c8_compiler_base.cc:2121]      Shape: bf16[126]") == (
        "1590 2a886c8_compiler_base.cc:2121", "     Shape: bf16[126]")
    assert log_prefix("2020-05-04 09:05:40.721128: E    1578 tensorflow/compiler/xla/xla_client/xla_util.cc:76]"
                      "   3. Size: 6.00G") == ("1578 tensorflow/compiler/xla/xla_client/xla_util.cc:76", "  3. Size: 6.00G")
    assert log_prefix("2022-04-04 00:27:49.642385: E tensorflow/compiler/xla/xla_client/xla_util.cc:88] \t [[x]]") == (
        "tensorflow/compiler/xla/xla_client/xla_util.cc:88", "\t [[x]]")
    assert payload("E0110 18:36:27.929399    1590 2a886c8_compiler_base.cc:2121]") == ""
    assert payload("    reserved        530.00M ") == "    reserved        530.00M "
    assert payload("Epoch 1 [12/100] loss 0.3") == "Epoch 1 [12/100] loss 0.3"


def test_program_line_keeps_the_indentation_a_wrapper_is_followed_by():
    assert program_line("(pid=4242)     reserved        530.00M ") == "    reserved        530.00M "
    assert program_line("[rank0]:   1. Size: 2.00G") == "  1. Size: 2.00G"
    assert program_line("[rank0]: ") == "" and program_line("    HLO temp") == "    HLO temp"
    assert program_line("[1,0]<stderr>:Total hbm usage >= 1.00G:") == "Total hbm usage >= 1.00G:"


def test_torchprime_28_host_listing_with_a_glog_prefix_on_every_line():
    report = _report(TORCHPRIME)
    assert report.header is None and report.total is None  # the thread's block starts at the program requirement
    program = report.program
    assert (program.kind, program.memory_space) == ("program", "host") and _close(program.total_bytes, 145.69, G)
    (temp,) = program.items
    assert (temp.name, temp.utilization_percent, temp.fragmentation_bytes) == ("HLO temp", 100.0, 0)
    assert _close(temp.unpadded_bytes, 145.69, G) and _close(temp.padded_bytes, 145.69, G)
    first, second = report.allocations
    assert (first.rank, first.memory_space, first.size_bytes, first.unpadded_bytes) == (1, "host", 63 * G, 63 * G)
    assert first.dims == (126, 2, 8192, 16384) and first.dtype == "bf16" and first.shape_bytes == 63 * G
    assert first.xla_label == 'custom-call.313 = custom-call(), custom_call_target="AllocateBuffer"'
    assert first.allocation_type == "HLO temp" and first.op_name is None
    assert (second.rank, second.size_bytes, second.shape) == (2, 63 * G, None)  # the excerpt ends at its size
    assert [r.what for r in report.reconciliations] == [
        "Program host requirement 145.69G: sum of its items", "HLO temp = padded + fragmentation",
        "allocation 1: size = unpadded + padding",
        "allocation 1: unpadded size = bytes of bf16[126,2,8192,16384]{3,2,1,0:T(8,128)(2,1)S(5)}"]
    assert all(r.difference_bytes == 0 for r in report.reconciliations) and report.problems == []


def test_torchxla_3470_reservation_logged_line_by_line_by_tensorflow_cpp():
    reports = parse_oom_reports((DATA / "torchxla_3470_runtime_reserve_tf_prefixed.log").read_text())
    assert len(reports) == 2  # the status, then the same failure among the recent error logs
    for report in reports:
        r = report.reservation
        assert _close(r.requested_bytes, 6.48, G) and _close(r.free_bytes, 6.78, G) and r.reserved_bytes == 0
        assert _close(r.reservable_bytes, 3.33, G) and r.capacity_bytes is None and r.table == {}
        assert report.header is None and report.allocations == [] and report.reconciliations == []


def test_transformers_22328_prefixed_lines_then_python_lines_without_a_prefix():
    reports = parse_oom_reports((DATA / "transformers_22328_reserve_tf_prefixed_interleaved.log").read_text())
    assert len(reports) == 3  # two xla_util.cc:90 lines, then the exception's '(0) RESOURCE_EXHAUSTED' line
    assert {(r.reservation.requested_bytes, r.reservation.free_bytes, r.reservation.reservable_bytes)
            for r in reports} == {(parse_size("10.51G"), parse_size("8.97G"), parse_size("8.97G"))}
    assert all(r.problems == [] and r.allocations == [] for r in reports)


def test_torchxla_2569_allocation_failure_inside_xla_dists_wrapper():
    failure = _report("torchxla_2569_allocate_xla_dist_wrapped.log").allocation_failure
    assert (failure.requested_bytes, failure.free_bytes, failure.largest_free_bytes, failure.device) == (
        parse_size("180.59M"), parse_size("142.58M"), None, "0x3x0_HBM1")


def test_jax_7822_compiler_aborts_early():
    report = _report("jax_7822_compile_early_abort.log")
    assert report.early_abort.required_bytes == parse_size("3.47E") and _close(
        report.early_abort.available_bytes, 14.49, G)
    assert report.header is None and report.reconciliations == []
    # libtpu's later wording (XLA's error_1000 docs), with 'device' and a flag after it
    (later,) = parse_oom_reports(
        "RESOURCE_EXHAUSTED: Compilation failure: Aborting compilation early because it's unlikely to have enough "
        "device memory. Requires 3.84T, has 90.96G available. If more detailed logging is desired, set "
        "--xla_tpu_impure_oom_fast_exit_threshold=-1")
    assert (later.early_abort.required_bytes, later.early_abort.available_bytes) == (
        parse_size("3.84T"), parse_size("90.96G"))


@pytest.mark.parametrize(("name", "prefix_end"), [
    (TORCHPRIME, "2a886c8_compiler_base.cc:2121]"),
    ("torchxla_3470_runtime_reserve_tf_prefixed.log", "xla_util.cc:88]")])
def test_a_prefixed_listing_reads_as_the_same_listing_without_its_prefixes(name, prefix_end):
    text = (DATA / name).read_text()
    bare = _without(text, prefix_end)
    assert "E0110" not in bare and "2022-04-04" not in bare and bare.count("\n") == text.count("\n")
    assert parse_oom_reports(bare) == parse_oom_reports(text)


@pytest.mark.parametrize("wrapper", ["[pod/train-job-0/jax] ", "(pid=4242, ip=10.0.0.2) ", "[rank0]: ",
                                     "2024-05-04 09:05:40.721128: E    1578 tensorflow/compiler/xla/xla_util.cc:76] "])
def test_a_listing_wrapped_by_a_launcher_or_logged_with_a_prefix_reads_the_same(wrapper):
    text = (DATA / "easydel_166_compile_hbm_report.log").read_text()
    wrapped = "\n".join(wrapper + line for line in text.split("\n"))
    (bare,), (report,) = parse_oom_reports(text), parse_oom_reports(wrapped)
    assert report.header.line == wrapper + bare.header.line  # the line as the log printed it
    report.header = dataclasses.replace(report.header, line=bare.header.line)
    assert report == bare and len(report.allocations) == 2 and report.problems == []


def test_a_prefixed_listing_with_other_threads_lines_between_its_lines():
    text = (DATA / TORCHPRIME).read_text()
    others = ["I0110 18:36:27.929300    1601 tpu_runtime.cc:88] heartbeat from chip 3",
              "2025-01-10 18:36:27.929301: W tensorflow/core/framework/op_kernel.cc:1745] OP_REQUIRES failed",
              "W0110 18:36:27.929302    1590 other_file.cc:12]   1. Size: 1.00G"]
    lines = text.split("\n")
    mixed = []
    for index, line in enumerate(lines):
        mixed.append(line)
        if index < len(lines) - 2:
            mixed.append(others[index % len(others)])
    (report,) = parse_oom_reports("\n".join(mixed))
    assert report == _report(TORCHPRIME)
    assert [a.size_bytes for a in report.allocations] == [63 * G, 63 * G]  # the other file's '1. Size' is not one


def test_listings_of_two_pods_interleaved_read_as_two():
    one = (DATA / "easydel_166_compile_hbm_report.log").read_text().split("\n")
    two = (DATA / "easydel_142_compile_hbm_report.log").read_text().split("\n")
    mixed = []
    for index in range(max(len(one), len(two))):
        mixed += [f"[pod/w-0/jax] {one[index]}"] if index < len(one) else []
        mixed += [f"[pod/w-1/jax] {two[index]}"] if index < len(two) else []
    second, first = parse_oom_reports("\n".join(mixed))  # in log order: w-1's header is on its first line
    assert _close(first.header.used_bytes, 63.80, G) and _close(second.header.used_bytes, 30.21, G)
    assert first.header.line.startswith("[pod/w-0/jax] ") and second.header.line.startswith("[pod/w-1/jax] ")
    assert first.problems == second.problems == [] and len(second.reconciliations) == 7
