"""The real TPU compiler's own material (tests/data/preflight, written by its make_fixtures.py with libtpu on a CPU
host), read by tpudoctor's existing readers and held against the compiler's figures. Needs no libtpu."""

from __future__ import annotations

import json

from paths import TESTS

from tpudoctor.captures.hlo import decode_hlo_proto
from tpudoctor.logs.oom import parse_memory_analysis, parse_oom_reports
from tpudoctor.memory.attribution import attribute, attribute_heap_peak
from tpudoctor.preflight.compiler import read_out_of_memory

DATA = TESTS / "data" / "preflight"


def _read(name: str) -> str:
    return (DATA / name).read_text()


def test_the_plan_of_a_program_that_fits_matches_memory_analysis():
    plan = decode_hlo_proto((DATA / "v5e_mlp_adam_1024.hlo.pb").read_bytes())
    stats = json.loads(_read("v5e_mlp_adam_1024.json"))
    assert plan.argument_bytes == stats["argument_size_in_bytes"] == 52428800
    assert plan.output_bytes == stats["output_size_in_bytes"]
    assert plan.alias_bytes == stats["alias_size_in_bytes"] == 0
    # memory_analysis's peak counts 60.5 MiB more than the dumped assignment's default memory (it holds a 66 MiB
    # allocation in colour 1 apart): a fixed amount, 1.6 % of a 1.6 GB program, nothing of a 16 GB one
    assert 0 <= stats["peak_memory_in_bytes"] - plan.peak_bytes <= 64 << 20
    attribution = attribute(plan)
    assert sum(attribution.buckets.values()) == plan.peak_bytes and attribution.named_fraction == 1.0
    assert attribution.buckets["optimizer_state"] == 2 * 4 * 1024 * 1024 * 4  # mu and nu of four f32 weights


def test_the_heap_peak_attribution_of_a_program_that_fits_is_memory_analysis_peak_to_the_byte():
    # the allocations all at once are 60.5 MiB under peak_memory_in_bytes (above); the compiler's peak is the
    # parameters, outputs and constants with the buffers live at the peak of the larger temporary heap
    plan = decode_hlo_proto((DATA / "v5e_mlp_adam_1024.hlo.pb").read_bytes())
    stats = json.loads(_read("v5e_mlp_adam_1024.json"))
    attribution = attribute_heap_peak(plan)
    assert attribution.peak_bytes == sum(attribution.buckets.values()) == stats["peak_memory_in_bytes"] == 167773696
    assert attribution.named_fraction == 1.0 and attribution.buckets["other"] == 0
    assert attribution.buckets["optimizer_state"] == 2 * 4 * 1024 * 1024 * 4
    # the temporaries are those live at the heap's peak: no fragmentation in a peak of live bytes
    assert attribution.buckets["activations"] > 0 and attribution.buckets["fragmentation"] == 0


def test_the_printed_memory_analysis_is_read_field_for_field():
    stats = json.loads(_read("v5e_mlp_adam_1024.json"))
    (printed,) = parse_memory_analysis(_read("v5e_mlp_adam_1024.memory_analysis.txt"))
    # print() leaves peak_memory_in_bytes out; every field it prints is the compiler's
    assert printed.fields == {k: v for k, v in stats.items() if k != "peak_memory_in_bytes"}


def test_the_plan_dumped_by_a_compile_that_failed_is_what_the_compiler_says_it_needs():
    plan = decode_hlo_proto((DATA / "v5e_mlp_adam_oom.hlo.pb").read_bytes())
    error = _read("v5e_mlp_adam_oom.txt")
    oom = read_out_of_memory(error)  # the one OOM grammar's reading of JAX's compile error
    assert oom.memory_space == "hbm" and oom.available_bytes == int(15.75 * (1 << 30))
    needs = oom.required_bytes
    assert abs(plan.peak_bytes - needs) <= 0.001 * needs  # 25.03G, to the compiler's 0.01G
    log = _read("v5e_mlp_adam_oom.libtpu.log")
    total = int(log.split("Total bytes: ", 1)[1].split()[0])  # libtpu's own report of the default memory
    assert abs(plan.peak_bytes - total) <= 0.0001 * total
    attribution = attribute(plan)
    assert attribution.named_fraction == 1.0
    assert attribution.buckets["optimizer_state"] == 8 * (1 << 30)  # Adam's mu and nu of four 16384^2 f32 weights


def test_the_oom_reader_reads_libtpus_header_and_the_vmem_report():
    (report,) = parse_oom_reports(_read("v5e_mlp_adam_oom.libtpu.log"))
    assert report.header.memory_space == "hbm" and report.header.at_compile
    assert abs(report.header.used_bytes - 25.03 * (1 << 30)) < 0.01 * (1 << 30)
    assert report.header.capacity_bytes == int(15.75 * (1 << 30))
    vmem = parse_oom_reports(_read("v5e_pallas_vmem_oom.txt"))[0]
    assert vmem.header.memory_space == "vmem" and vmem.header.capacity_bytes == 128 << 20


def test_one_compile_error_is_one_oom_report():
    assert len(parse_oom_reports(_read("v5e_pallas_vmem_oom.txt"))) == 1


def test_the_oom_reader_reads_the_compile_error_jax_raises():
    reports = parse_oom_reports(_read("v5e_mlp_adam_oom.txt"))
    assert reports and reports[0].header.capacity_bytes == int(15.75 * (1 << 30))


def test_the_oom_reader_reads_libtpus_usage_tables():
    (report,) = parse_oom_reports(_read("v5e_mlp_adam_oom.libtpu.log"))
    assert report.allocations


def test_the_preflight_reads_the_compilers_out_of_memory_texts_through_the_one_grammar():
    log = _read("v5e_mlp_adam_oom.libtpu.log")  # libtpu's "Used 25.03G of 15.75G hbm." header
    oom = read_out_of_memory(log)
    assert oom.memory_space == "hbm" and oom.available_bytes == int(15.75 * (1 << 30))
    assert abs(oom.required_bytes - 25.03 * (1 << 30)) < 0.01 * (1 << 30)
    vmem = read_out_of_memory(_read("v5e_pallas_vmem_oom.txt"))  # a kernel's VMEM: not the program's HBM
    assert (vmem.memory_space, vmem.required_bytes, vmem.available_bytes) == ("vmem", None, None)
    # libtpu's TensorCore + SparseCore form (tests/data/logs/sig_hbm-oom-sparsecore.log): the preflight's own
    # patterns read no memory space in it, so a compile that ran out of HBM was taken for one that failed
    split = read_out_of_memory("RESOURCE_EXHAUSTED: TPU TensorCore Hbm usage: 34.82G, SparseCore Hbm usage "
                               "174.10G, exceeding available bytes: 95.74G")
    assert split.memory_space == "hbm" and split.available_bytes == round(95.74 * (1 << 30))
    assert abs(split.required_bytes - (34.82 + 174.10) * (1 << 30)) < 0.01 * (1 << 30)
    assert read_out_of_memory("INVALID_ARGUMENT: the mesh has 3 devices").memory_space == ""
