"""``tpudoctor goodput`` on the hostile probe of 2026-12-04 (N2, N3, N3b, N13, N14, N23, N29): odd clocks, odd flags
and odd files, each made from the probe's own inputs (the bundled MaxText log, edited as the probe edited it).
Each test failed on the code before its fix."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from paths import TESTS

from tpudoctor.cli import main

BUNDLED = TESTS / "fixtures" / "goodput" / "maxtext_restart.log"


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
    (898,845 bytes of text). Now the shares stop at 100 % and the skew is named."""
    log = _edited(tmp_path, "feb29.log", ("I0813", "I0229"), ("E0813", "E0229"))
    main(["goodput", str(log)])
    text = capsys.readouterr().out
    assert len(text) < 10_000
    shares = [float(m.group(1)) for m in re.finditer(r"  (\d+\.\d\d)(?:  |$)", text, re.M)]  # the % of wall column
    assert shares and max(shares) <= 100.0
    assert "not supported" in text.splitlines()[1]
    code, doc = _json(capsys, str(log), "--format", "json")
    assert max(_shares(doc)) <= 100.0 and doc["goodput"]["consistency"]["zone_skews"]
    assert "166.0 days" in doc["goodput"]["consistency"]["unsupported"]
    for fmt in ("markdown", "html"):
        main(["goodput", str(log), "--format", fmt])
        out = capsys.readouterr().out
        assert len(out) < 30_000
        assert not re.search(r"width:(?:[1-9]\d{2,}|10[1-9])\.", out)  # no bar wider than its box


# --------------------------------------------------------------------- N13, N14: --step-pattern, --year
def _custom_log(tmp_path: Path) -> Path:
    """The probe's custom.log: ``2024-08-13 10:00:10 iter 0 done in 5.0s`` and on, every 5 s."""
    path = tmp_path / "custom.log"
    path.write_text("".join(f"2024-08-13 10:00:{10 + 5 * i:02d} iter {i} done in 5.0s\n" for i in range(10)))
    return path


def test_a_seconds_group_that_catches_text_names_the_line_and_the_group(tmp_path, capsys):
    """Before: exit 3 "ValueError: could not convert string to float: 'done'"."""
    log = _custom_log(tmp_path)
    assert main(["goodput", str(log), "--step-pattern", r"iter (?P<step>\d+) (?P<seconds>\S+)"]) == 2
    err = capsys.readouterr().err
    assert f"{log}:1" in err and "(?P<seconds>...)" in err and "'done'" in err


@pytest.mark.parametrize("pattern, words", [
    (r"iter \d+", "needs a (?P<step>"),            # before: exit 0, "ETTR 0.000", "0 step(s) (None to None)"
    (r"(a)\1(?P<step>\d+)", "RE2"),                 # a backreference: no linear-time matcher runs it
])
def test_a_step_pattern_without_a_step_group_or_beyond_re2_is_a_usage_error(pattern, words, tmp_path, capsys):
    assert main(["goodput", str(_custom_log(tmp_path)), "--step-pattern", pattern]) == 2
    assert words in capsys.readouterr().err


def test_a_backtracking_step_pattern_on_a_40_kB_line_takes_no_time(tmp_path, capsys):
    """Before: ``(a+)+$(?P<step>\\d+)`` on a line of 40,000 'a' ran past 120 s (Python's backtracking)."""
    import time

    log = tmp_path / "redos.log"
    log.write_text("a" * 40_000 + "\n")
    started = time.monotonic()
    main(["goodput", str(log), "--step-pattern", r"(a+)+$(?P<step>\d+)"])
    capsys.readouterr()
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("year", ["0", "-1", "10000"])
def test_a_year_out_of_range_is_refused(year, capsys):
    """Before: accepted, and the report said the lines "carry no timestamps" (they do)."""
    assert main(["goodput", str(BUNDLED), f"--year={year}"]) == 2
    assert "--year out of range" in capsys.readouterr().err


# --------------------------------------------------------------------- N29: percentages, one parser
@pytest.mark.parametrize("given", ["90%", "0.9"])
def test_min_ettr_takes_a_ratio_or_the_same_in_percent(given, capsys):
    """Before: ``--min-ettr 90%`` was refused while compare read ``5%%`` as 5 %."""
    assert main(["goodput", str(BUNDLED), "--min-ettr", given]) == 1
    assert "--min-ettr 0.9: FAILED" in capsys.readouterr().out


def test_a_doubled_percent_sign_is_refused_by_goodput_and_compare(tmp_path, capsys):
    assert main(["goodput", str(BUNDLED), "--min-ettr", "90%%"]) == 2
    assert "not a percentage" in capsys.readouterr().err
    assert main(["goodput", str(BUNDLED), "--format", "json", "-o", str(tmp_path / "a.json")]) == 0
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "a.json"), "--fail-on-regression", "5%%"]) == 2
    assert "--fail-on-regression: not a percentage" in capsys.readouterr().err


# --------------------------------------------------------------------- N23: the same log twice
def test_the_same_log_given_twice_is_read_once(tmp_path, capsys):
    """Before: 4 starts, "3 restart(s) ... 36 step(s) done again", buckets adding up to 200 %, no warning."""
    copy = tmp_path / "copy.log"
    copy.write_bytes(BUNDLED.read_bytes())
    _, once = _json(capsys, str(BUNDLED))
    for argv in ([str(BUNDLED), str(BUNDLED)], [str(BUNDLED), str(copy)]):
        _, doc = _json(capsys, *argv)
        assert doc["goodput"]["restarts"] == once["goodput"]["restarts"] == 1
        assert doc["goodput"]["ettr"] == once["goodput"]["ettr"]
        assert len(doc["sources"]) == 1
        assert any("read once" in note for note in doc["goodput"]["notes"])


def test_stdin_given_twice_is_read_once(capsys, monkeypatch):
    """Before: ``goodput - -`` listed "<stdin>, <stdin>"."""
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BUNDLED.read_bytes())))
    _, doc = _json(capsys, "-", "-")
    assert [s["source"] for s in doc["sources"]] == ["<stdin>"]
    assert any("<stdin> was given more than once" in note for note in doc["goodput"]["notes"])


# --------------------------------------------------------------------- N29: a .gz cut short
def test_a_gz_log_cut_short_is_read_up_to_the_cut(tmp_path, capsys):
    """Before: "nothing to read: mrt.log.gz is stopped reading: Compressed file ended before the end-of-stream
    marker was reached" (exit 2) for a file whose first two thirds are whole."""
    whole = gzip.compress(BUNDLED.read_bytes())
    log = tmp_path / "mrt.log.gz"
    log.write_bytes(whole[: len(whole) * 2 // 3])
    code, doc = _json(capsys, str(log))
    assert code == 0
    assert doc["goodput"]["steps"] and doc["goodput"]["steps"] > 5
    assert doc["sources"][0]["cut"].startswith("was cut short")
    assert any("read up to the cut" in note for note in doc["goodput"]["notes"])
    assert doc["goodput"]["consistency"]["confidence"]["level"] == "medium"


def test_a_utc_offset_given_after_a_space_is_the_flag_s_value(capsys):
    """``--tz -08:00`` (as users type it) used to be refused: argparse took the offset for an option."""
    joined = _json(capsys, str(BUNDLED), "--tz=-08:00")
    spaced = _json(capsys, str(BUNDLED), "--tz", "-08:00")
    assert spaced[0] == joined[0]
    assert spaced[1]["goodput"]["goodput_percent"] == joined[1]["goodput"]["goodput_percent"]
