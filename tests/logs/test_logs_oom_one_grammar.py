"""One OOM grammar (tpudoctor.logs.oom) for `memory` and `check --step 4`: the same line gives both the same op
name, shape and size; and the frozen set of public out-of-memory texts (tests/data/oom/frozen_set_1) reads as
labelled."""

from __future__ import annotations

import sys

import pytest
from paths import REPO, TESTS

from tpudoctor.logdiag.diagnose import diagnose_text
from tpudoctor.logs.oom import parse_oom_reports
from tpudoctor.logs.sizes import parse_size

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FROZEN = TESTS / "data" / "oom" / "frozen_set_1"
LABELS = tomllib.loads((FROZEN / "labels.toml").read_text())


def _check_allocations(text: str) -> list[dict]:
    for diagnosis in diagnose_text(text):
        if "largest_allocations" in diagnosis.evidence:
            return diagnosis.evidence["largest_allocations"]
    return []


@pytest.mark.parametrize("name", ["easydel_166", "easydel_142", "flowpm_27", "colabfold_62"])
def test_check_and_memory_read_the_same_op_name_shape_and_size(name):
    # easydel's op names hold spaces ("precision=(Precision.DEFAULT, ...)"): check used to cut them at the first
    text = (FROZEN / f"{name}.txt").read_text()
    (report,) = parse_oom_reports(text)
    checked = _check_allocations(text)
    assert checked and len(checked) == len(report.allocations)
    for row, allocation in zip(checked, report.allocations, strict=True):
        assert (row.get("op_name"), row.get("shape"), row["size_bytes"]) == (
            allocation.op_name, allocation.shape, allocation.size_bytes)
    label = LABELS[name]["allocations"][0]
    assert report.allocations[0].shape == label["shape"]
    assert report.allocations[0].op_name == label.get("op_name")


def test_check_ranks_the_fix_a_listings_buffers_support_as_memory_does():
    # flowpm#27: s32[8388608,8,4] under T(8,128) holds 32 GiB for 1 GiB of elements; check named no fix before
    text = (FROZEN / "flowpm_27.txt").read_text()
    (diagnosis,) = [d for d in diagnose_text(text) if d.id == "hbm-oom-compile"]
    fixes = diagnosis.evidence["fixes"]
    assert fixes[0]["id"] == LABELS["flowpm_27"]["fix"] == "tiling-padding"
    assert fixes[0]["saves_bytes_at_most"] == 33285996544 and fixes[0]["enough"] is True
    assert fixes[0]["basis"].startswith("estimate from text")


@pytest.mark.parametrize("name, signature", [("torchprime_28", "host-memory-program-oom"),
                                             ("pytorch_xla_1965", "hbm-oom")])
def test_check_reads_a_listing_printed_one_glog_line_at_a_time(name, signature):
    # every line of the listing under its own glog prefix: check read each line apart (torchprime#28: no allocation;
    # pytorch/xla#1965, one entry's tail: an unrecognised failure)
    (diagnosis,) = [d for d in diagnose_text((FROZEN / f"{name}.txt").read_text()) if d.status.name == "FAIL"]
    assert diagnosis.id == signature
    (want,) = LABELS[name]["allocations"]
    assert [row["shape"] for row in diagnosis.evidence["largest_allocations"]] == [want["shape"]]


def test_an_smem_out_of_memory_is_one_with_its_figures():
    (diagnosis,) = [d for d in diagnose_text((FROZEN / "vllm_8318.txt").read_text()) if d.status.name == "FAIL"]
    assert diagnosis.id == "smem-oom"
    assert (diagnosis.evidence["smem_used_bytes"], diagnosis.evidence["smem_capacity_bytes"],
            diagnosis.evidence["smem_excess_bytes"]) == (1 << 20, 1 << 20, parse_size("1.7K"))


@pytest.mark.parametrize("name", sorted(LABELS))
def test_every_frozen_text_reads_as_labelled(name):
    label = LABELS[name]
    reports = parse_oom_reports((FROZEN / f"{name}.txt").read_text())
    assert bool(reports) == label["is_oom"]
    if not reports:
        return
    report = reports[0]
    stated = {
        "used": report.header.used_bytes if report.header else None,
        "capacity": (report.header.capacity_bytes if report.header else None)
        or (report.reservation.capacity_bytes if report.reservation else None)
        or (report.early_abort.available_bytes if report.early_abort else None),
        "exceeded": report.header.exceeded_bytes if report.header else None,
        "requested": (report.reservation or report.allocation_failure).requested_bytes
        if (report.reservation or report.allocation_failure) else None,
        "free": (report.reservation or report.allocation_failure).free_bytes
        if (report.reservation or report.allocation_failure) else None,
        "required": (report.early_abort.required_bytes if report.early_abort else None)
        or (report.program.total_bytes if report.program else None),
    }
    for figure, found in stated.items():
        if figure in label:
            expected = parse_size(label[figure])
            assert found is not None and abs(found - expected) <= 0.01 * expected, figure
    for want in label.get("allocations", []):
        shapes = [a.shape for a in report.allocations]
        if "shape" in want:
            assert want["shape"] in shapes
        if "size" in want:
            assert any(a.size_bytes is not None and abs(a.size_bytes - parse_size(want["size"]))
                       <= 0.01 * parse_size(want["size"]) for a in report.allocations)


def test_a_compile_error_and_its_payload_copy_are_one_report():
    text = (TESTS / "data" / "preflight" / "v5e_pallas_vmem_oom.txt").read_text()
    assert text.count("Ran out of memory in memory space vmem") == 2  # once plain, once in the escaped payload
    assert len(parse_oom_reports(text)) == 1


def test_a_lone_size_line_without_its_title_or_fields_is_no_allocation():
    assert parse_oom_reports("W0110 18:36:27.929302    1590 other_file.cc:12]   1. Size: 1.00G") == []


LIBTPU_LOG = TESTS / "data" / "preflight" / "v5e_mlp_adam_oom.libtpu.log"


def test_libtpus_usage_tables_sum_to_each_spaces_total_bytes():
    (report,) = parse_oom_reports(LIBTPU_LOG.read_text())
    totals = {r.what: r for r in report.reconciliations if r.what.startswith("Memory usage report")}
    assert sorted(totals) == [f"Memory usage report, {space}: Total bytes = sum of its allocations"
                              for space in ("hbm", "smem", "vmem")]
    assert all(r.listed_bytes == r.header_bytes for r in totals.values())  # exact, on this compile
    assert report.allocations[0].memory_space == "hbm" and report.allocations[0].shape == "f32[16384,16384]"


def test_a_usage_report_the_log_cut_short_is_no_reconciliation_problem():
    # libtpu's report is one log message; glog cuts a long one (v5p's 96 GiB listing ends in a table's rule)
    text = LIBTPU_LOG.read_text()
    cut = text[:text.index("Memory Space: vmem")].rstrip()
    cut = cut[:cut.rindex("cumulative_size")] + "cumulative_size;       size;       offset; used_by_n_values; " \
                                                "shapes_list\n  ---------------------"
    (report,) = parse_oom_reports(cut)
    assert report.allocations and report.problems == []
    assert not any(r.what.startswith("Memory usage report, hbm") for r in report.reconciliations)


@pytest.mark.slow
def test_the_real_compilers_listings_round_trip():
    # compiles two programs that do not fit (v5e, v6e) with libtpu on this host; see benchmarks/oom_roundtrip.py
    import subprocess
    import tempfile

    root = REPO
    env = {**__import__("os").environ, "TPU_LOG_DIR": tempfile.mkdtemp()}
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "oom_roundtrip.py"), "v5e", "v6e"],
                          capture_output=True, text=True, timeout=300, env=env)
    if done.stdout.startswith("SKIP"):
        pytest.skip(done.stdout.strip())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "every generation holds" in done.stdout
