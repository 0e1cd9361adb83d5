"""``tpudoctor goodput`` on the hostile probe of 2026-12-04 (N2, N3, N3b, N13, N14, N23, N29): odd clocks, odd flags
and odd files, each made from the probe's own inputs (the bundled MaxText log, edited as the probe edited it).
Each test failed on the code before its fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tpudoctor.cli import main

BUNDLED = Path(__file__).parent / "fixtures" / "goodput" / "maxtext_restart.log"


def _edited(tmp_path: Path, name: str, *swaps: tuple[str, str]) -> Path:
    """The bundled log with ``sed 's/OLD/NEW/'`` applied (first match on each line), as the probe made it."""
    lines = BUNDLED.read_text().splitlines(keepends=True)
    for old, new in swaps:
        lines = [line.replace(old, new, 1) for line in lines]
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


def _json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["goodput", *argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _shares(doc: dict) -> list[float]:
    return [entry["percent"] for entry in doc["goodput"]["badput"].values() if entry["percent"] is not None]


def _measurable(doc: dict) -> dict:
    return next(f for f in doc["findings"] if f["id"] == "goodput-measurable")


# --------------------------------------------------------------------- N2: one line's clock 2 h ahead
def test_one_line_two_hours_ahead_does_not_move_the_wall_time(tmp_path, capsys):
    """``sed 's/I0813 10:04:10/I0813 12:04:10/'``: step 1's line says 12:04:10 but ``seconds: 10.000``, and the
    lines around it are at 10:04:00 and 10:04:20. Before: ETTR 0.031 over a 2.26 h wall, WASTED 87 % + OTHER 89 %,
    ✗ "restart cost 87.3 %", --min-ettr 0.2 exit 1. Now the line is set aside (the step's own 10 s), the figures
    are the unedited log's, the finding says so and confidence is lowered."""
    log = _edited(tmp_path, "oneahead.log", ("I0813 10:04:10", "I0813 12:04:10"))
    code, doc = _json(capsys, str(log), "--min-ettr", "0.2")
    _, clean = _json(capsys, str(BUNDLED))
    g = doc["goodput"]
    assert code == 0
    assert g["wall_s"] == clean["goodput"]["wall_s"] == 960.0
    assert g["ettr"] == clean["goodput"]["ettr"] == pytest.approx(0.2708, abs=1e-4)
    assert sum(_shares(doc)) + g["goodput_percent"] <= 100.0 + 0.1
    outlier = g["consistency"]["clock_outliers"][0]
    assert outlier["at"] == f"{log}:10" and outlier["ahead_s"] == 7190.0 and "own duration (10 s)" in outlier["treated"]
    assert g["consistency"]["confidence"]["level"] == "medium"
    finding = _measurable(doc)
    assert finding["status"] == "WARN" and f"{log}:10" in finding["title"]
    assert finding["confidence"]["level"] == "medium"
    assert g["clock_jumps"] == []


def test_parts_that_overrun_the_wall_are_not_a_pass_and_the_gate_says_it_cannot_judge(tmp_path, capsys):
    """The probe's own overrun: the bundled log read with ``--tz=-08:00`` (N3) puts start-up at 193 % of the wall.
    Before: every finding ✓ incl. "The log supports the goodput figures", exit 0 under --min-ettr (1 below it).
    Now the shares stop at 100 %, the measurable finding FAILs, the others are not judged, and the gate exits 2."""
    code, doc = _json(capsys, str(BUNDLED), "--tz=-08:00", "--min-ettr", "0.005")
    g = doc["goodput"]
    assert code == 2
    assert doc["gate"]["verdict"] == "not_judged" and "cannot support" in doc["gate"]["reason"]
    assert max(_shares(doc)) <= 100.0
    assert any(entry.get("over_wall") for entry in g["badput"].values())
    assert g["consistency"]["unsupported"] and g["consistency"]["confidence"]["level"] == "low"
    finding = _measurable(doc)
    assert finding["status"] == "FAIL"
    assert {f["status"] for f in doc["findings"] if f["id"] != "goodput-measurable"} == {"SKIP"}


# --------------------------------------------------------------------- N3: zoneless lines read in the wrong zone
@pytest.mark.parametrize("zone_argv, env_tz", [(["--tz=-08:00"], None), (["--tz", "local"], "America/Los_Angeles")])
def test_zoned_and_zoneless_lines_that_disagree_by_hours_are_flagged(zone_argv, env_tz, tmp_path, capsys,
                                                                      monkeypatch):
    """The XPK lines say UTC, the glog lines take the zone given: 7-8 h apart. Before: ETTR 0.010 / 0.009,
    TPU_INITIALIZATION 193 %, every finding ✓. Now the disagreement is named with the zone that fits (UTC)."""
    if env_tz:
        monkeypatch.setenv("TZ", env_tz)
        import time

        time.tzset()
    try:
        code, doc = _json(capsys, str(BUNDLED), *zone_argv)
    finally:
        if env_tz:
            monkeypatch.delenv("TZ")
            import time

            time.tzset()
    skews = doc["goodput"]["consistency"]["zone_skews"]
    assert skews and abs(skews[0]["skew_s"]) >= 7 * 3600 - 60
    assert skews[0]["suggested_tz"] == "UTC"
    finding = _measurable(doc)
    assert finding["status"] == "FAIL" and "--tz UTC" in finding["remediation"]["text"]
    assert max(_shares(doc)) <= 100.0


def test_the_bundled_log_in_utc_has_no_zone_skew(capsys):
    """The guard against a false alarm: the unedited log's XPK and glog lines agree."""
    _, doc = _json(capsys, str(BUNDLED))
    consistency = doc["goodput"]["consistency"]
    assert consistency["zone_skews"] == [] and consistency["unsupported"] is None
    assert consistency["confidence"]["level"] == "high" and _measurable(doc)["status"] == "PASS"


@pytest.mark.parametrize("offset", ["+99:00", "-14:01", "+15:00"])
def test_an_offset_beyond_fourteen_hours_is_refused(offset, capsys):
    """Before: ``--tz=+99:00`` was accepted (WASTED 37,132 %). No zone on Earth is beyond ±14:00."""
    assert main(["goodput", str(BUNDLED), f"--tz={offset}"]) == 2
    assert "14:00" in capsys.readouterr().err


# --------------------------------------------------------------------- N3b: a date moved to Feb 29
def test_a_date_moved_by_months_gives_bounded_bars_and_no_verdict(tmp_path, capsys):
    """``sed 's/I0813/I0229/;s/E0813/E0229/'``. Before: WASTED 3984 h = 1,494,007 %, two bars of 448,268 '#'
    (898,845 bytes of text). Now the bars stop at the column, shares at 100 %, and the skew is named."""
    log = _edited(tmp_path, "feb29.log", ("I0813", "I0229"), ("E0813", "E0229"))
    main(["goodput", str(log)])
    text = capsys.readouterr().out
    assert len(text) < 10_000
    bars = [len(m.group(0)) for m in re.finditer(r"#+", text)]
    assert bars and max(bars) <= 30
    assert "not supported" in text.splitlines()[1]
    code, doc = _json(capsys, str(log), "--format", "json")
    assert max(_shares(doc)) <= 100.0 and doc["goodput"]["consistency"]["zone_skews"]
    for fmt in ("markdown", "html"):
        main(["goodput", str(log), "--format", fmt])
        out = capsys.readouterr().out
        assert len(out) < 30_000
        assert not re.search(r"width:(?:[1-9]\d{2,}|10[1-9])\.", out)  # no bar wider than its box
