"""The diff against the last good run (issue 42, after ByteDance's LogSage): templates new in the failing run, or
much more frequent there, ranked; ``check --log-file BAD --baseline-log GOOD`` quotes the top ones on an
unrecognised failure. The pairs are real processes: a small JAX job (benchmarks/baseline_job.py) run as is and
with one injected failure each (benchmarks/make_baseline_pairs.py)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from paths import TESTS
from test_log_sources import check, logs001

from tpudoctor.logdiag.baseline import compare, compare_files

PAIRS = TESTS / "data" / "logs" / "baseline_pairs"
MANIFEST = tomllib.loads((PAIRS / "manifest.toml").read_text(encoding="utf-8"))["pair"]


def test_the_failures_line_is_among_the_top_3_new_templates_in_at_least_8_of_10_pairs():
    assert len(MANIFEST) >= 10
    hits, misses = 0, []
    for pair in MANIFEST:
        diff = compare_files(PAIRS / f"{pair['kind']}.bad.log", PAIRS / f"{pair['kind']}.good.log")
        top = [d.first_line for d in diff.top(3)]
        if any(pair["failure"] in line for line in top):
            hits += 1
        else:
            misses.append((pair["kind"], top))
    assert hits >= 0.8 * len(MANIFEST), misses
    assert hits == len(MANIFEST), misses  # as measured: 12 of 12, each the top one


def test_what_both_runs_print_is_not_new_and_numbers_times_and_paths_do_not_make_it_new():
    good = PAIRS / "exit.good.log"
    diff = compare_files(good, good)
    assert diff.ranked == ()
    lines = good.read_text(encoding="utf-8").splitlines()
    assert compare([line.replace("00:", "11:") for line in lines], lines).ranked == ()


def test_a_template_much_more_frequent_in_the_failing_run_is_ranked_after_the_new_ones():
    good = [f"step {i} loss 0.{i}" for i in range(50)] + ["retrying read of shard 3"]
    bad = [f"step {i} loss 0.{i}" for i in range(10)] + ["retrying read of shard 3"] * 20 + ["OSError: shard 3 lost"]
    ranked = compare(bad, good).ranked
    assert ranked[0].first_line == "OSError: shard 3 lost" and ranked[0].new
    assert ranked[1].template.startswith("retrying read of shard") and not ranked[1].new
    assert (ranked[1].failing_count, ranked[1].good_count) == (20, 1)


def test_check_with_a_baseline_log_quotes_the_new_lines_on_an_unrecognised_failure():
    bad, good = PAIRS / "exit.bad.log", PAIRS / "exit.good.log"
    code, report = check("--log-file", str(bad), "--baseline-log", str(good))
    result = logs001(report)
    new = result["evidence"]["new_since_good_run"]
    assert "data loader worker 3 died unexpectedly" in new[0] and new[0].startswith(f"{bad}:")


def test_a_baseline_log_without_a_failing_log_or_that_cannot_be_read_is_a_usage_error(tmp_path):
    good = PAIRS / "exit.good.log"
    code, _ = check("--baseline-log", str(good))
    assert code == 2
    code, report = check("--log-file", str(PAIRS / "exit.bad.log"), "--baseline-log", str(tmp_path / "nope.log"))
    assert code == 2 and "--baseline-log" in report["stderr"]
    code, _ = check("--log-file", str(PAIRS / "exit.bad.log"), "--baseline-log", str(tmp_path))
    assert code == 2


def test_of_a_long_log_the_last_lines_are_mined_and_line_numbers_stay_the_files(monkeypatch, tmp_path):
    import tpudoctor.logdiag.baseline as baseline

    monkeypatch.setattr(baseline, "MAX_LINES", 8)
    bad = tmp_path / "bad.log"
    bad.write_text((PAIRS / "exit.good.log").read_text(encoding="utf-8")
                   + (PAIRS / "exit.bad.log").read_text(encoding="utf-8"), encoding="utf-8")
    total = len(bad.read_text(encoding="utf-8").splitlines())
    diff = baseline.compare_files(bad, PAIRS / "exit.good.log")
    assert diff.failing_lines == 8 and total > 20
    assert "data loader worker 3 died" in diff.ranked[0].first_line
    assert bad.read_text(encoding="utf-8").splitlines()[diff.ranked[0].first_line_no - 1] == diff.ranked[0].first_line
    assert diff.ranked[0].first_line_no > total - 8
