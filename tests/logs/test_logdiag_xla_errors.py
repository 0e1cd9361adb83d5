"""XLA's error catalog (openxla/xla ``docs/errors/``, 17 pages, https://openxla.org/xla/errors): each page's sample
message, verbatim, names its family and code, with the code's page as the docs. One test per page; the page is
cited in each test's name and docstring."""

from __future__ import annotations

import pytest
from paths import TESTS

from tpudoctor.findings import Status
from tpudoctor.logdiag import diagnose_file, diagnose_text
from tpudoctor.logdiag.catalog import load_catalog, xla_error_page

GOODPUT_RESTART_LOG = TESTS / "fixtures" / "goodput" / "maxtext_restart.log"


def _named(text: str, family: str, code: str) -> None:
    findings = diagnose_text(text)
    assert findings, f"no finding for {text[:80]!r}"
    top = findings[0]
    assert top.id == family, (top.id, top.message)
    assert top.evidence.get("xla_error_code") == code
    assert top.remediation is not None and top.remediation.docs_url == xla_error_page(code)
    assert top.status is Status.FAIL


def test_error_0001_is_the_catalogs_template_and_names_no_family():
    """docs/errors/error_0001.md is the template page ("Error description", an MLIR block reading ``test``):
    no message; no signature claims the code or its placeholder text."""
    assert not any(s.xla_error == "E0001" for s in load_catalog().signatures)
    assert all(f.id == "unrecognised-failure" or f.status is not Status.FAIL
               for f in diagnose_text("# Error code: 0001\n\nError description\n\ntest\n"))


def test_error_0100_buffer_allocation_failure():
    """docs/errors/error_0100.md, E0100 Runtime: Buffer Allocation Failure."""
    _named("ValueError: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 8.00M. That was "
           "not possible. There are 6.43M free.; (0x0x1_HBM0)\n", "hbm-oom-runtime", "E0100")


def test_error_0101_program_allocation_failure():
    """docs/errors/error_0101.md, 0101 Program allocation failure."""
    _named("XlaRuntimeError: RESOURCE_EXHAUSTED: Error loading program 'jit_embedding_pipeline_step_fn': Attempting "
           "to reserve 29.49G at the bottom of memory. That was not possible. There are 147.64M free, 0B reserved, "
           "and 147.64M reservable. Scope: unknown..: while running replica 0 and partition 34 of a replicated "
           "computation (other replicas may have failed as well).\n", "hbm-oom-runtime", "E0101")


def test_error_0102_program_input_buffer_mismatch():
    """docs/errors/error_0102.md, 0102 Program input buffer mismatch."""
    _named("XlaRuntimeError: INVALID_ARGUMENT: Executable(jit_embedding_pipeline_step_fn) expected parameter 2482 of "
           "size 5242880 (bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}) but got buffer with incompatible size 1638400 "
           "(bf16[16,1280,40]{1,2,0:T(8,128)(2,1)}): while running replica 0 and partition 0 of a replicated "
           "computation (other replicas may have failed as well).\n", "program-input-mismatch", "E0102")


E0200_HALT = ("Core halted unexpectedly: INTERNAL: Accelerator device halted prematurely, perhaps due to an on-device "
              "check-failure. Node 0 halted unexpectedly at tag:pc ")


def test_error_0200_core_halted_each_scenario():
    """docs/errors/error_0200.md, E0200 Runtime: Core Halted Unexpectedly: its sample, each scenario's signature
    and sample (3.A launch group, 3.B bounds check, 3.C Mosaic semaphore), and the fix per scenario."""
    _named("INTERNAL: Accelerator device halted prematurely, perhaps due to an on-device check-failure. Node 0 halted "
           "unexpectedly at tag:pc TensorCoreSequencer:1:0x1d9 ...\n", "core-halted", "E0200")
    for kind in ("Hardware", "Network", "Power"):  # scenario 1: infrastructure, retry then replace the host
        _named(f"{E0200_HALT}TensorCoreSequencer:1:0x1d9: observed errors are: [{kind}]\n",
               "core-halted-infrastructure", "E0200")
    top = diagnose_text(f"{E0200_HALT}TensorCoreSequencer:1:0x1d9: observed errors are: [Hardware]\n")[0]
    report = next(c for c in top.remediation.commands if "report-host-as-faulty" in c)
    assert report.startswith("gcloud compute instances report-host-as-faulty TPU_NAME --zone ZONE")
    assert "only after a retry" in report and "Retry the job once" in top.remediation.text
    assert "REPLACE-HOST" in top.remediation.text
    _named(f"{E0200_HALT}TensorCoreSequencer:1:0x1d9: observed errors are: [User]\n",  # scenario 2: compiler bug
           "core-halted-compiler", "E0200")
    assert "XLA" in diagnose_text(f"{E0200_HALT}x: observed errors are: [User]\n")[0].remediation.text
    _named(f"{E0200_HALT}TensorCoreSequencer:1:0x1d9 (from TensorCoreSequencer:1:0x309): scheckne: An unexpected "
           "leader shows up in the launch group with a different launch id than the current group leader.\n",
           "core-halted-launch-group", "E0200")
    _named(f"{E0200_HALT}TensorCoreSequencer:23:0x292 (from TensorCoreSequencer:23:0xd74a): BoundsCheck 92 [deref "
           "of %s931] for %937 = dma.hbm_to_vmem [thread:$0]  /*hbm=*/%s931, /*size_in_granules=*/16384, "
           "/*vmem=*/%s935, /*dst_syncflagno=*/%s860, /*src_stride=*/512, /*dst_stride=*/128, "
           "/*steps_per_stride=*/8\n", "core-halted-bounds-check", "E0200")
    assert diagnose_text(f"{E0200_HALT}x: BoundsCheck 92 [deref of %s931] for %937 = dma.hbm_to_vmem [t]\n")[0]\
        .evidence["bounds_op"] == "dma.hbm_to_vmem"
    _named(f"{E0200_HALT}TensorCoreSequencer:21:0xae5 (from TensorCoreSequencer:21:0x54c5): Semaphore (scratch "
           "argument 1) has a nonzero value upon exit from a Mosaic kernel. Make sure every DMA is awaited, and "
           "every semaphore signal is paired with a wait.\n", "core-halted-semaphore", "E0200")


def test_error_03xx_core_halt_launch_group():
    """docs/errors/error_03xx.md, 03xx Core Halt: its sample (quote marks and the asterisk rule as printed)."""
    _named('"XlaRuntimeError: INTERNAL: Core halted unexpectedly: INTERNAL: Accelerator device halted prematurely, '
           "perhaps due to an on-device check-failure. Node 0 halted unexpectedly at tag:pc "
           "TensorCoreSequencer:1:0x175 (from TensorCoreSequencer:1:0x21f): scheckne: \n***************\n"
           "An unexpected peer shows up in the launch group with a different launch id than the current group "
           "leader. If using single controller backends, this signals a bug in the runtime scheduling system or "
           'above. If using multi-controller backends"\n', "core-halted-launch-group", "E03xx")


def test_error_1000_compile_time_hbm_oom():
    """docs/errors/error_1000.md, E1000 Compile Time: HBM OOM: both samples (the first is E1002's own message)."""
    _named("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 49.34G "
           "of 32.00G hbm. Exceeded hbm capacity by 17.34G.\n", "hbm-oom-compile", "E1000")
    _named("RESOURCE_EXHAUSTED: TPU TensorCore Hbm usage: 34.82G, SparseCore Hbm usage 174.10G, exceeding available "
           "bytes: 95.74G\n", "hbm-oom-sparsecore", "E1002")


def test_error_1001_vmem_oom():
    """docs/errors/error_1001.md, 1001 HBM and Vmem OOM (a scoped VMEM allocation of a kernel)."""
    _named("XlaRuntimeError: RESOURCE_EXHAUSTED: Allocation (size=134217728) would exceed memory (size=67108864) :: "
           "#allocation25 [shape = 'u8[134217728]{0}', space=vmem, size = 0x8000000, tag = 'scoped memory for "
           "ragged_latency_optimized_all_gather_lhs_contracting_gated_matmul_kernel.2'] :: "
           "ragged_latency_optimized_all_gather_lhs_contracting_gated_matmul_kernel.2\n", "vmem-oom", "E1001")


def test_error_1002_tensorcore_plus_sparsecore_hbm():
    """docs/errors/error_1002.md, 1002 HBM and Vmem OOM (TensorCore + SparseCore HBM)."""
    _named("XlaRuntimeError: RESOURCE_EXHAUSTED: TPU TensorCore Hbm usage: 34.82G, SparseCore Hbm usage 174.10G, "
           "exceeding available bytes: 95.74G\n", "hbm-oom-sparsecore", "E1002")
    evidence = diagnose_text("RESOURCE_EXHAUSTED: TPU TensorCore Hbm usage: 34.82G, SparseCore Hbm usage 174.10G, "
                             "exceeding available bytes: 95.74G\n")[0].evidence
    assert evidence["sc_hbm_bytes"] > evidence["hbm_capacity_bytes"] > evidence["tc_hbm_bytes"]


def test_error_1200_host_offload_output_mismatch():
    """docs/errors/error_1200.md, 1200 Compile Time: Host Offload Output Mismatch."""
    _named("INVALID_ARGUMENT: Tensor which is moved to host (starting from tuple.64) is returned from the entry "
           "computation but the layout for this output is not set to host memory.\n", "host-offload-output", "E1200")


def test_error_2001_mosaic_unsupported_rhs_type():
    """docs/errors/error_2001.md, E2001 Compile Time: Mosaic Unsupported RHS DataType on Hardware."""
    text = ("INTERNAL: Mosaic failed to compile TPU kernel: Unsupported matmul RHS type on target: "
            "'vector<256x256xi8>'\n...\n\nThe MLIR operation involved:\n%13440 = \"tpu.matmul\"(%13435, %13437, "
            "%13439) <dimension_numbers = #tpu.dot_dimension_numbers<...>\n")
    _named(text, "mosaic-matmul-type", "E2001")
    assert diagnose_text(text)[0].evidence["matmul_type"] == "vector<256x256xi8>"


def test_error_2002_mosaic_misaligned_block_and_tiling():
    """docs/errors/error_2002.md, E2002 Compile Time: Mosaic Input/Output Misaligned Block and Tiling (the sample
    as the page wraps it, and the form with the code that newer releases print)."""
    _named("UNIMPLEMENTED: Mosaic failed to compile TPU kernel: Failed to set window params\nfor input 0: Operand of "
           "shape (..., 256, 8192) has tiling (16, 128), but its\nblock shape (..., 8, 8192) is not divisible by "
           "tiling evenly nor matches the full shape.\n", "mosaic-block-tiling", "E2002")
    _named("INVALID_ARGUMENT: Mosaic failed to compile TPU kernel: Failed to set window params for output 0: E2002: "
           "CompileTimeMosaicMisalignedBlockAndTiling: x\n", "mosaic-block-tiling", "E2002")


def test_error_2003_mosaic_unproven_alignment():
    """docs/errors/error_2003.md, E2003 Compile Time: Mosaic Unproven Memory Access Alignment."""
    _named("INTERNAL: Mosaic failed to compile TPU kernel: cannot statically prove that index in dimension 1 is a "
           "multiple of 128\n\nat location: ...\n\nThe MLIR operation involved:\n  %14372 = \"vector.load\"(%14371, "
           "%93, %14363) : (memref<4x256xf32, #tpu.memory_space<vmem>>, index, index) -> vector<1x32xf32>\n",
           "mosaic-unproven-alignment", "E2003")


@pytest.mark.parametrize(("sample", "family", "code"), [
    ("INTERNAL: Mosaic failed to compile TPU kernel: Unsupported matmul RHS type on target: 'vector<128x128xbf16>'",
     "mosaic-matmul-type", "E2001"),
    ("INTERNAL: Mosaic failed to compile TPU kernel: cannot statically prove that index in dimension 0 is a "
     "multiple of 1024", "mosaic-unproven-alignment", "E2003"),
    ("INVALID_ARGUMENT: Mosaic failed to compile TPU kernel: unregistered operation 'tpu.wait_dma' found in dialect "
     "('tpu') that does not allow unknown operations", "mosaic-version", "E2xxx"),
    ("INVALID_ARGUMENT: Mosaic failed to compile TPU kernel: Static device assignment is undefined",
     "mosaic-compile", "E2xxx"),
    ("INTERNAL: Mosaic failed to compile TPU kernel: failed to legalize operation 'arith.mulf'",
     "mosaic-compile", "E2xxx"),
    ("INTERNAL: Mosaic failed to compile TPU kernel: Slice shape along dimension 1 must be aligned to tiling (2), "
     "but is 1.at location: loc(\"\"dma_start:\"\"(\"\"a2a-dma-send/dma_start\"\"(callsite(\"\"run_a2a.<locals>\"",
     "mosaic-compile", "E2xxx"),
])
def test_error_2xxx_mosaic_compilation_failures(sample, family, code):
    """docs/errors/error_2xxx.md, 2xxx Mosaic Compilation Failures: each of its six sample lines."""
    _named(sample + "\n", family, code)


def test_error_3000_sparsecore_allocation_failure():
    """docs/errors/error_3000.md, E3000 Compile Time: SparseCore Allocation Failure."""
    text = ("INTERNAL:Failed to run pass pipeline. Hlo-Op: result.1:279:1: error: 'memref.alloca' op current "
            "allocation offset upper bound (140704 words) exceeds the legitimate user allocatable offset upper bound "
            "(131071 words) in memory space 201 when allocating 23440 words. result.1:279:1: note: see current "
            "operation: %232 = \"memref.alloca\"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> "
            "memref<23440xf32, 201>\n")
    _named(text, "sparsecore-alloc", "E3000")
    assert diagnose_text(text)[0].evidence["sc_memory_space"] == 201


def test_error_3001_sparsecore_no_viable_logical_replica_count():
    """docs/errors/error_3001.md, E3001 CompileTime: SparseCore No Viable Logical Replica Count."""
    _named("XLA:TPU compile permanent error. Compilation failure: No viable logical replica count for the embedding "
           "table with metadata: max_nz_per_row = 141352, max_unique_nz_per_row = 8, feature_width = 8, "
           "sample_count = 204800 (last tried split factor for vector splitting = 1, last tried split factor for "
           "sample dimension splitting = 1, fixed_size_allocation_bytes = 410880, row_dependent_size_allocation_bytes "
           "= 1696224, total_spmem_size_bytes = 524288) ...\n", "sparsecore-replica-count", "E3001")


def test_error_C0432_mismatched_ranks():
    """docs/errors/error_C0432.md, C0432 MismatchedRanks: the page gives no message, only its HLO example
    (``f32[4,4] add(p0, p1)`` with a rank-3 ``p1``); a line carrying the code and its name names the family,
    the HLO alone (no error) names nothing."""
    _named("INVALID_ARGUMENT: C0432 - MismatchedRanks: The ranks of the two operands for the operation are not "
           "compatible.\n", "shape-rank-mismatch", "C0432")
    assert diagnose_text("p0 = f32[4,4] parameter(0)\np1 = f32[4,4,4] parameter(1)\n\nf32[4,4] add(p0, p1)\n") == [] \
        or diagnose_text("p0 = f32[4,4] parameter(0)\n")[0].status is not Status.FAIL


def test_the_goodput_restart_logs_core_halt_is_named_not_unrecognised():
    """Issue 38 (N20): the bundled goodput log's ``Core halted unexpectedly ... Accelerator device halted
    prematurely, perhaps due to an on-device check-failure`` was an "Unrecognised failure"."""
    findings = diagnose_file(GOODPUT_RESTART_LOG)
    assert findings[0].id == "core-halted", [(f.id, f.message) for f in findings]
    assert findings[0].evidence["xla_error_code"] == "E0200"
    assert "no debugging message found" in findings[0].evidence["halt_detail"]
    assert not any(f.id == "unrecognised-failure" for f in findings)


def test_every_xla_family_carries_its_page_as_docs():
    for signature in load_catalog().signatures:
        if signature.xla_error:
            assert signature.remediation.docs_url == xla_error_page(signature.xla_error), signature.id
