"""Warm-up detection (MSER) on real window series of ``tpudoctor bench``, and the gate's noise rule.

Every series is examples/s per timed window, copied from real ``tpudoctor bench --model dense`` runs
(TensorFlow 2.21 on the CI machine's CPU, global batch 128, on 2 cores shared with other jobs):

* WARMING_UP: 12 windows of 20 steps; window 1 is the warm-up (189k, then ~290k).
* FLAT: 12 windows of 20 steps on a quiet moment, no warm-up visible (305k-320k).
* LOADED: 12 windows of 20 steps with ``--inject-step-delay 0.1`` while neighbours loaded both cores.
"""

from __future__ import annotations

import numpy as np
import pytest
from paths import TESTS

from tpudoctor.bench import gate
from tpudoctor.bench.document import build_document
from tpudoctor.bench.findings import gate_finding
from tpudoctor.bench.steady import (
    coefficient_of_variation,
    default_max_dropped,
    measured_steady_state,
    mser_truncation,
    steady_state,
    warmup_allowance,
)
from tpudoctor.findings import Status

WARMING_UP = [189248.1, 291147.0, 300825.5, 290166.8, 286837.8, 290290.7, 295148.2, 298388.2, 283006.6, 293367.4,
              291257.8, 287071.3]
FLAT = [312201.0, 315680.0, 311353.0, 305698.0, 311521.0, 317726.0, 319934.0, 314139.0, 317434.0, 318596.0,
        311971.0, 314110.0]
LOADED = [94506.0, 83990.0, 91149.0, 93054.0, 87861.0, 98203.0, 99652.0, 83353.0, 99199.0, 96248.0, 128212.0,
          112792.0]


def test_the_warm_up_window_is_dropped_and_the_spread_falls_sixfold():
    steady = steady_state(WARMING_UP, max_dropped=warmup_allowance(8))
    assert steady.dropped_windows == 3 and steady.settled and len(steady.kept) == 9
    assert 189248.1 not in steady.kept
    assert coefficient_of_variation(WARMING_UP) == pytest.approx(0.1058, abs=1e-4)  # warm-up counted
    assert steady.cv == pytest.approx(0.0160, abs=1e-4)  # steady windows only
    assert steady.to_dict() == {"method": "mser", "dropped_windows": 3, "max_dropped_windows": 4, "settled": True,
                                "kept_windows": 9, "cv": steady.cv}


def test_mser_is_the_minimum_of_the_marginal_standard_error():
    values = np.asarray(WARMING_UP)
    scores = [((values[d:] - values[d:].mean()) ** 2).sum() / (len(values) - d) ** 2 for d in range(7)]
    assert mser_truncation(WARMING_UP) == int(np.argmin(scores))
    assert mser_truncation([300e3, 301e3]) == 0  # too short to tell


def test_a_flat_run_keeps_its_median_and_reads_as_settled():
    steady = steady_state(FLAT, max_dropped=4)
    assert steady.settled  # MSER's pick past the allowance is within the later windows' spread: noise, not warm-up
    assert abs(np.median(steady.kept) / np.median(FLAT) - 1) < 0.01
    assert steady.cv == pytest.approx(0.0100, abs=1e-4)


def test_a_run_still_climbing_past_the_allowance_is_not_settled():
    climbing = [200e3, 230e3, 260e3, *WARMING_UP[3:]]  # the real steady windows after a longer, made ramp
    climbing[3] = 280e3
    steady = steady_state(climbing, max_dropped=2)
    assert steady.dropped_windows == 2 and not steady.settled


def test_no_allowance_keeps_every_window():
    steady = steady_state(WARMING_UP, max_dropped=0)
    assert steady.dropped_windows == 0 and steady.kept == tuple(WARMING_UP)


def test_a_document_without_an_allowance_keeps_at_least_the_gate_minimum():
    assert default_max_dropped(8, gate.MIN_WINDOWS) == 2 and default_max_dropped(6, gate.MIN_WINDOWS) == 0
    old = {"samples": WARMING_UP[:8]}  # a 1.0 baseline: no steady_state recorded
    assert len(measured_steady_state(old, min_kept=gate.MIN_WINDOWS).kept) >= gate.MIN_WINDOWS


def test_the_document_reports_the_dropped_windows_and_the_median_of_the_rest():
    from test_bench_document import run_result

    doc = build_document(run_result(samples=WARMING_UP), tool_version="0.1.0", warmup_windows_allowed=4)
    m = doc["measurement"]
    assert m["steady_state"]["dropped_windows"] == 3 and m["samples"] == WARMING_UP
    assert m["median"] == pytest.approx(float(np.median(WARMING_UP[3:])))


# --- the noise rule --------------------------------------------------------------------------------------------------

def test_a_drop_far_beyond_the_extra_noise_is_still_a_regression():
    result = gate.compare(FLAT, LOADED)
    assert result.noisier and result.noise_ratio == pytest.approx(0.1289 / 0.01265, rel=0.01)
    assert result.noise_tolerance == pytest.approx(0.05 + 2 * np.sqrt(0.1289**2 - 0.01265**2), abs=0.002)
    assert result.verdict == "regression"  # -70 %: no neighbour explains that


def test_a_drop_within_the_extra_noise_is_unknown_not_a_regression():
    # the loaded windows' own spread around a median 15 % below the baseline's: significant, beyond tolerance
    current = list(np.asarray(LOADED) / np.median(LOADED) * np.median(FLAT) * 0.85)
    result = gate.compare(FLAT, current)
    assert result.ratio == pytest.approx(0.85, abs=0.001) and result.p_value_slower < result.alpha
    assert result.noisier and result.verdict == "unknown"
    doc = {"key": {"model": "dense"}, "measurement": {},
           "comparison": {"baseline_file": "b.json", "key_mismatches": [], "gate": result.to_dict()}}
    finding = gate_finding(doc)
    assert finding.status == Status.WARN
    assert finding.message.startswith("unknown: the machine was 10.2x noisier than the baseline's")
    from test_bench_document import run_result

    from tpudoctor.rendering import render

    rendered = build_document(run_result(samples=current), tool_version="0.1.0")
    rendered["comparison"] = {**doc["comparison"], "baseline_key": rendered["key"], "allowed_mismatch": False}
    markdown = render(rendered, "markdown")
    assert "\nunknown (the machine was noisier than the baseline's): -15.0% vs baseline" in markdown
    assert "the machine was 10.2x noisier than the baseline's (CV 12.9% vs 1.3%): a regression must exceed 30.6%" \
        in markdown


def test_the_same_drop_on_a_machine_as_quiet_as_the_baselines_is_a_regression():
    quiet_spread = np.asarray(FLAT) / np.median(FLAT)  # the baseline's own spread
    current = list(quiet_spread[::-1] * np.median(FLAT) * 0.85)
    result = gate.compare(FLAT, current)
    assert not result.noisier and result.noise_tolerance == result.tolerance and result.verdict == "regression"


def test_a_baseline_noisier_than_the_run_is_said_to_hide_all_but_large_drops():
    noisy_baseline = list(np.asarray(LOADED) / np.median(LOADED) * np.median(FLAT))  # loaded spread, same median
    result = gate.compare(noisy_baseline, FLAT)
    assert result.verdict == "no_change" and not result.noisier
    doc = {"key": {"model": "dense"}, "measurement": {},
           "comparison": {"baseline_file": "b.json", "key_mismatches": [], "gate": result.to_dict()}}
    finding = gate_finding(doc)
    assert finding.status == Status.PASS
    assert "the baseline's windows were 10.2x noisier than this run's (CV 12.9% vs 1.3%)" in finding.message


@pytest.mark.parametrize("reason,words", [("not_reproduced", "unknown (the drop was gone on a fresh run): -52.1%"),
                                          ("not_significant", "unknown (a fresh run did not confirm the drop)"),
                                          ("busier", "unknown (the machine was busier than the baseline")])
def test_an_unknown_verdict_says_its_own_reason_not_noise(reason, words):
    """A drop that a fresh run did not reproduce read 'unknown (the machine was noisier than the baseline's)' on a
    machine no noisier than the baseline's: the verdict names why it is unknown."""
    import json

    from tpudoctor.rendering import render

    doc = json.loads((TESTS / "data" / "documents" / "bench_dense_cpu_vs_baseline.json").read_text())
    doc["comparison"]["gate"].update(verdict="unknown", unknown_reason=reason)
    for fmt in ("text", "markdown", "html"):
        out = render(doc, fmt)
        assert words in out and "noisier" not in out, fmt
