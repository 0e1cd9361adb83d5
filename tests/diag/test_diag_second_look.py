"""The second look at a peer comparison that was not clear-cut (``tpudoctor.diag.second_look``), on seeded timings:
which runs are unclear, that a clear one is never measured again, that a noisy first look is set aside for a calm
second one, that a chip near its margin is judged on both looks pooled, and that a level out of time says so."""

from __future__ import annotations

import pytest

from tpudoctor.diag import second_look, stats
from tpudoctor.diag.rule import example_input, example_timings
from tpudoctor.diag.rules.matmul_peers import MatmulPeers
from tpudoctor.findings import Status
from tpudoctor.rule import evaluate_rule

EVEN = [1.0] * 8


def slow(extra: float, device: int = 3) -> list[float]:
    return [1.0 + extra if d == device else 1.0 for d in range(8)]


def never():
    raise AssertionError("a clear first look must not be measured again")


@pytest.mark.parametrize("seconds, jitter, words", [
    (EVEN, 0.08, "scatter"),          # a noisy run: its bar rises off the floor
    (slow(0.035), 0.004, "near its"),  # a chip at +3.5 %: neither clean nor beyond its margin
])
def test_an_unclear_comparison_says_why(seconds, jitter, words):
    table = stats.compare_peers(example_timings(seconds, jitter=jitter).frame, "tflops")
    assert words in stats.unclear(table)


@pytest.mark.parametrize("seconds", [EVEN, slow(0.10), [1.0, 1.2]])
def test_a_clear_comparison_is_not_measured_again(seconds):
    first = example_timings(seconds, jitter=0.004)
    assert stats.unclear(stats.compare_peers(first.frame, "tflops")) is None
    assert second_look.settle(first, never) is first


def test_a_noisy_first_look_is_set_aside_for_a_calm_second_and_the_slow_chip_fails():
    noisy = example_timings(slow(0.06), jitter=0.08)
    assert not evaluate_rule(MatmulPeers, example_input(8, matmul=noisy)).status == Status.FAIL
    settled = second_look.settle(noisy, lambda: example_timings(slow(0.10), jitter=0.004))
    assert settled.judged_on.startswith("the second look alone") and len(settled.frame) == 8 * 20
    finding = evaluate_rule(MatmulPeers, example_input(8, matmul=settled))
    assert finding.status == Status.FAIL and finding.scope.chips == ("cpu:3",)
    assert "looked at twice" in finding.message and "scatter" in finding.message
    assert [look["unclear"] is None for look in finding.evidence["looks"]] == [False, True]


def test_a_chip_near_its_margin_is_judged_on_both_looks_pooled():
    first = example_timings(slow(0.035), jitter=0.004)
    settled = second_look.settle(first, lambda: example_timings(slow(0.035), jitter=0.004))
    assert settled.judged_on == "both looks pooled"
    assert settled.frame["rep"].nunique() == 40 and len(settled.frame) == 2 * len(first.frame)
    finding = evaluate_rule(MatmulPeers, example_input(8, matmul=settled))
    assert finding.status == Status.PASS and finding.evidence["reps"] == 40


def test_a_level_out_of_time_judges_the_first_look_and_says_so():
    first = example_timings(EVEN, jitter=0.08)
    settled = second_look.settle(first, never, fits=lambda cost: False)
    assert settled.frame is first.frame and "no time left" in settled.judged_on
    message = evaluate_rule(MatmulPeers, example_input(8, matmul=settled)).message
    assert "unclear (the chips scatter" in message and "no time left" in message


def test_r2_takes_a_second_look_only_within_its_budget(monkeypatch):
    """The pipeline's own loop, with the measurements replaced by seeded timings that say how long they took: a
    noisy matmul (30 s) is measured again; a noisy bandwidth test after it would pass the 110 s budget, so is not."""
    import dataclasses

    from tpudoctor.diag import measure, pipeline
    from tpudoctor.diag.levels import SECOND_LOOK_BUDGET_S
    from tpudoctor.diag.rule import example_devices

    elapsed = {"s": 0.0}

    def taking(seconds, timings):
        def take(*args, **kwargs):
            elapsed["s"] += seconds
            return dataclasses.replace(timings, wall_s=seconds)
        return take

    taken = {"matmul": 0, "hbm": 0}

    def counted(name, take):
        def run(*args, **kwargs):
            taken[name] += 1
            return take(*args, **kwargs)
        return run

    noisy = example_timings(EVEN, jitter=0.08)
    monkeypatch.setattr(measure, "inventory", lambda: measure.Inventory(backend="cpu", jax_version="0.10.2",
                                                                        devices=example_devices(8), process_count=1))
    monkeypatch.setattr(measure, "gemm_check", lambda sizes, faults: None)
    monkeypatch.setattr(measure, "all_reduce", lambda sizes, progress=None: None)
    monkeypatch.setattr(measure, "matmul_throughput", counted("matmul", taking(30.0, noisy)))
    monkeypatch.setattr(measure, "hbm_bandwidth", counted("hbm", taking(30.0, example_timings(EVEN, jitter=0.08, unit="gbps"))))
    monkeypatch.setattr(pipeline.time, "perf_counter", lambda: elapsed["s"])
    subject, _ = pipeline.measure_level(pipeline.DiagOptions(level=2))
    assert taken == {"matmul": 2, "hbm": 1}, taken
    assert elapsed["s"] <= SECOND_LOOK_BUDGET_S
    assert subject.matmul.judged_on == "both looks pooled"
    assert "no time left" in subject.hbm.judged_on
