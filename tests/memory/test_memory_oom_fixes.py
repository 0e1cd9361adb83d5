"""Fixes ranked from an out-of-memory listing's own figures (tpudoctor.memory.oom_fixes), on verbatim texts of the
frozen set (tests/data/oom/frozen_set_1)."""

from __future__ import annotations

import json

from paths import TESTS

from tpudoctor.cli import main
from tpudoctor.logs.oom import parse_oom_reports
from tpudoctor.memory.oom_fixes import rank_text_fixes

FROZEN = TESTS / "data" / "oom" / "frozen_set_1"


def test_a_listing_of_padded_buffers_ranks_the_padding_fix_first_with_the_compilers_own_padding():
    # flowpm#27: s32[8388608,8,4] under T(8,128), 32x expansion; the thread kept the batch dimension
    (report,) = parse_oom_reports((FROZEN / "flowpm_27.txt").read_text())
    (fix,) = rank_text_fixes(report)
    assert fix.id == "tiling-padding" and fix.saves_bytes_at_most == 31 << 30 and fix.enough is True
    assert "32x expansion" in fix.basis and fix.basis.startswith("estimate from text")


def test_little_padding_or_none_names_no_fix():
    for name in ("colabfold_62", "easydel_166", "jaxline_11"):  # 1.50M of 9.08G; no padding; no listing
        (report,) = parse_oom_reports((FROZEN / f"{name}.txt").read_text())
        assert rank_text_fixes(report) == []


def test_memory_reports_the_ranked_fix_as_an_estimate(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["memory", str(FROZEN / "flowpm_27.txt"), "--format", "json", "-o", str(out)]) == 1
    document = json.loads(out.read_text())
    (listing,) = document["texts"][0]["listings"]
    assert [fix["id"] for fix in listing["fixes"]] == ["tiling-padding"]
    (finding,) = [f for f in document["findings"] if f["id"] == "memory-oom"]
    assert finding["confidence"]["level"] == "low" and "31.00 GiB" in finding["remediation"]["text"]
