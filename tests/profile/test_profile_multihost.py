"""Multi-host analysis over real 4-process JAX captures (tests/fixtures/profiles/multihost_*).

The jobs all-reduce over gloo every step; worker2 is the odd one out (see the fixtures' README).
Timings differ between machines and runs, so the assertions have margins, never exact durations.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from paths import TESTS
from scipy import stats

import tpudoctor.profile
from tpudoctor.cli import main
from tpudoctor.profile.analysis.collectives import collective_kind, from_tables, host_collectives
from tpudoctor.profile.analysis.cross_host import (
    ALIGN_BY_ORDER,
    ALIGN_BY_STEP_NUM,
    binomial_tail,
    combine_hosts,
    decide_straggler,
    wilcoxon_greater,
)
from tpudoctor.profile.analysis.steps import find_steps
from tpudoctor.profile.pipeline import combine
from tpudoctor.schema import validate

FIXTURES = TESTS / "fixtures" / "profiles"
HOSTS = ["worker0", "worker1", "worker2", "worker3"]
EXTRA_WORK_MS = 30.0  # what worker2 adds per step in the generator


@pytest.fixture(scope="module")
def analyses():
    return {case: tpudoctor.profile.analyze(FIXTURES / case) for case in
            ("multihost_balanced", "multihost_slow_host", "multihost_input_stall", "multihost_recompiling")}


def _maps(report):
    return {name: from_tables(name, h.tables) for name, h in report.hosts.items()}


def test_every_host_of_the_run_is_loaded_with_its_all_reduces(analyses):
    for report in analyses.values():
        assert sorted(report.hosts) == HOSTS
        for name, host in report.hosts.items():
            collectives = from_tables(name, host.tables)
            table = collectives.per_step
            assert host.steps.method == "host-step-annotations" and len(table) == 12
            assert table["arrival_at_ns"].notna().all()  # one real cross-process all-reduce per step
            assert collectives.by_kind["kind"].tolist() == ["all-reduce"]
            assert collectives.clock.startswith("profile_start_time")


def test_slow_host_is_the_straggler_with_its_delay_and_the_job_is_not_device_bound(analyses):
    a = analyses["multihost_slow_host"]
    s = a.cross_host.straggler
    assert a.straggler == "worker2"
    assert a.cross_host.aligned_by == ALIGN_BY_STEP_NUM and s.steps_compared == 12
    assert s.last_arrival_steps >= 10
    assert 0.5 * EXTRA_WORK_MS < s.delay_ms_median < 2 * EXTRA_WORK_MS
    assert 0.5 * EXTRA_WORK_MS < s.others_wait_ms_per_step < 2 * EXTRA_WORK_MS
    assert "sign test" in s.decided_by and "Wilcoxon" in s.decided_by
    assert a.verdict != "device-bound"
    for name in ("worker0", "worker1", "worker3"):  # their all-reduce time is waiting, not compute
        verdict, reason = a.verdicts[name]
        assert verdict == "communication-bound", reason
        assert "waiting for other hosts" in reason and "worker2" in reason
    row = a.cross_host.per_host.set_index("host")
    assert (row.loc[["worker0", "worker1", "worker3"], "wait_percent"] > 40).all()
    assert row.loc["worker2", "wait_percent"] < 10
    doc = a.to_dict()
    assert doc["straggler"]["host"] == "worker2" and doc["straggler"]["delay_ms_median"] > 0.5 * EXTRA_WORK_MS
    assert doc["primary_host"] == "worker2"
    assert any(f["id"] == "straggler" for f in doc["findings"])


@pytest.mark.parametrize("case", ["multihost_input_stall", "multihost_recompiling"])
def test_a_late_host_for_any_reason_is_the_straggler(analyses, case):
    a = analyses[case]
    s = a.cross_host.straggler
    assert a.straggler == "worker2", s.decided_by
    assert s.delay_ms_median > 0.5 * EXTRA_WORK_MS
    assert a.verdict != "device-bound"
    if case == "multihost_recompiling":
        assert a.verdicts["worker2"][0] == "compile-bound"
        assert a.hosts["worker2"].compile.compile_count >= 8


def test_balanced_job_names_no_straggler_and_says_which_test_decided(analyses):
    a = analyses["multihost_balanced"]
    s = a.cross_host.straggler
    assert a.straggler is None and s.host is None
    assert s.decided_by.startswith("no straggler") and "Wilcoxon" in s.decided_by
    assert a.to_dict()["straggler"] is None
    from tpudoctor.rendering import render

    assert "\n  Straggler: none. no straggler: " in render(a.to_dict(), "text")
    # The balanced job's hosts wait little: most collective time is moving data.
    per_host = a.cross_host.per_host
    assert (per_host["wait_ms"] < per_host["collective_ms"]).all()


def test_collective_time_is_its_own_breakdown_part(analyses):
    doc = analyses["multihost_slow_host"].to_dict()
    worker0 = analyses["multihost_slow_host"].hosts["worker0"]
    assert worker0.breakdown.part("collective") > 50
    assert worker0.breakdown.part("compute") < 10  # the all-reduce wait is not compute
    percent = doc["breakdown"]["percent"]
    assert "collective" in percent and percent["collective"] + percent["compute"] <= 100.5
    assert doc["cross_host"]["straggler_test"]["candidate"] == "worker2"


def test_map_result_is_small_and_picklable(analyses):
    report = analyses["multihost_slow_host"]
    host = report.hosts["worker0"]
    tables = {k: v for k, v in host.tables.items() if k != "cross_host"}  # what the map returned
    assert len(pickle.dumps(tables)) < 20_000 and json.dumps(tables)  # small and JSON-ready
    again = from_tables("worker0", pickle.loads(pickle.dumps(tables)))
    original = host_collectives_of(report, "worker0")
    pd.testing.assert_frame_equal(again.per_step, original.per_step)
    # The combine needs only the map results: the same answer from unpickled copies of them.
    copies = [pickle.loads(pickle.dumps(h)) for h in report.hosts.values()]
    assert combine(copies).straggler == "worker2"


def host_collectives_of(report, name):
    return from_tables(name, report.hosts[name].tables)


def test_steps_without_markers_are_aligned_by_order(analyses):
    maps = {}
    for name, c in _maps(analyses["multihost_slow_host"]).items():
        table = c.per_step.copy()
        table["step_num"] = pd.array([pd.NA] * len(table), dtype="Int64")
        maps[name] = type(c)(c.host, "pseudo-steps-host-program-runs", table, c.by_kind, c.clock, c.collective_percent)
    cross = combine_hosts(maps)
    assert cross.aligned_by == ALIGN_BY_ORDER and cross.straggler.host == "worker2"
    delay_ms = cross.straggler.delay_ms_median
    # One host's profile began a step later, another's ended two steps early: the order is shifted back.
    late = maps["worker0"]
    maps["worker0"] = type(late)(late.host, late.step_method, late.per_step.iloc[1:].reset_index(drop=True),
                                 late.by_kind, late.clock, late.collective_percent)
    short = maps["worker3"]
    maps["worker3"] = type(short)(short.host, short.step_method, short.per_step.iloc[:-2], short.by_kind,
                                  short.clock, short.collective_percent)
    shifted = combine_hosts(maps)
    assert shifted.straggler.host == "worker2" and shifted.straggler.steps_compared == 9
    assert shifted.straggler.delay_ms_median == pytest.approx(delay_ms, rel=0.3)


def test_cli_json_report_of_a_multi_host_run(tmp_path, capsys):
    out = tmp_path / "report.json"
    code = main(["profile", "analyze", str(FIXTURES / "multihost_slow_host"), "--format", "json", "-o", str(out)])
    assert code in (0, 1)
    doc = json.loads(out.read_text())
    validate(doc, "profile_diagnosis")
    assert doc["straggler"]["host"] == "worker2" and doc["verdict"] != "device-bound"
    assert main(["profile", "analyze", str(FIXTURES / "multihost_slow_host")]) in (0, 1)
    assert "Straggler: worker2 arrives" in capsys.readouterr().out


def test_a_host_without_collectives_gives_no_straggler():
    # Two unrelated single-host captures in one run: nothing synchronises them, nobody waits.
    steady = tpudoctor.profile.load(FIXTURES / "jax_steady")
    host = next(iter(steady.hosts.values()))
    table = host_collectives(host, find_steps(host), "a")
    assert not table.has_collectives
    cross = combine_hosts({"a": table, "b": table})
    assert cross.straggler.host is None and "fewer than two hosts with collectives" in cross.straggler.decided_by


@pytest.mark.parametrize("name,kind", [
    ("all-reduce", "all-reduce"), ("all-reduce.3", "all-reduce"), ("%all-reduce-start.1 = f32[8]", "all-reduce"),
    ("all-gather-done", "all-gather"), ("reduce-scatter.2", "reduce-scatter"), ("all-to-all", "all-to-all"),
    ("collective-permute-start.4", "collective-permute"), ("send-done.7", "send-recv"), ("recv.1", "send-recv"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "all-reduce"), ("MegaScale: AllReduce", "megascale"),
    ("ncclKernel_AllGather_RING_LL_Sum_float", "all-gather"), ("ncclAllReduceRingLLKernel_sum_f32", "all-reduce"),
    ("allreduce/CollectiveReduce:CollectiveReduce", "all-reduce"), ("grad/CollectiveGatherV2:CollectiveGatherV2",
                                                                     "all-gather"),
    ("allreduce_2/CollectiveReduce/_339:_Recv", None), ("ncclCommInitRank", None),
    ("end: all-reduce", None), ("fusion.12", None), ("sender_loop", None), ("reduce.3", None), ("recvfrom", None),
])
def test_collective_kind(name, kind):
    assert collective_kind(name) == kind


def test_the_tests_agree_with_scipy():
    rng = np.random.default_rng(3)
    for n in (5, 12, 40, 90):
        d = np.round(rng.normal(0.4, 1.0, n), 1)  # rounded: ties and zeros, as arrival times have
        ours = wilcoxon_greater(d)
        theirs = stats.wilcoxon(d, alternative="greater", zero_method="wilcox").pvalue
        assert ours == pytest.approx(theirs, rel=0.05, abs=1e-3)
    for k, n in ((3, 12), (12, 12), (0, 5)):
        assert binomial_tail(k, n, 0.25) == pytest.approx(stats.binom.sf(k - 1, n, 0.25))


def test_noise_is_not_a_straggler_and_a_steady_lateness_is():
    rng = np.random.default_rng(7)
    arrivals = pd.DataFrame(rng.normal(0, 1e6, (20, 8)), columns=[f"h{i}" for i in range(8)])  # 1 ms jitter
    assert decide_straggler(arrivals, step_ms=pd.Series([100.0] * 20)).host is None
    arrivals["h5"] += 10e6  # 10 ms late every step
    found = decide_straggler(arrivals, step_ms=pd.Series([100.0] * 20))
    assert found.host == "h5" and 8 < found.delay_ms_median < 12
    # ...but a lateness far below the step time is a clock offset, not a straggler
    tiny = decide_straggler(arrivals, step_ms=pd.Series([10_000.0] * 20))
    assert tiny.host is None and "under" in tiny.decided_by


def test_megascale_formulas_on_dcn_send_recv_ops():
    # Two occurrences of one DCN collective: send, recv, then their dones (XLA op names, times in ps).
    us = 1_000_000
    ops = pd.DataFrame({
        "name": ["send.7", "recv.7", "send-done.7", "recv-done.7"] * 2,
        "start_ps": [0, 1 * us, 50 * us, 60 * us, 100 * us, 101 * us, 150 * us, 170 * us],
        "duration_ps": [1 * us, 1 * us, 5 * us, 10 * us] * 2,
        "bytes": [4e6, np.nan, np.nan, np.nan] * 2,
    })
    from tpudoctor.profile.analysis.collectives import megascale_stats

    table = megascale_stats(ops)
    assert table["observed_us"].tolist() == [70.0, 80.0]
    assert table["stall_us"].tolist() == [17.0, 17.0]
    assert table["slack_us"].tolist() == [53.0, 63.0]
    assert table["required_bandwidth_gbps"].round(3).tolist() == [round(4e6 / 53 / 1e3, 3), round(4e6 / 63 / 1e3, 3)]
    assert megascale_stats(ops[ops["name"] != "recv-done.7"]).empty  # incomplete: no figures


def test_a_host_clock_off_by_50_ms_is_corrected_from_the_collective_ends(analyses):
    maps = _maps(analyses["multihost_slow_host"])
    skewed = maps["worker1"]
    table = skewed.per_step.copy()
    for column in ("step_start_at_ns", "step_end_at_ns", "arrival_at_ns"):
        table[column] = table[column] + 50_000_000  # worker1's clock runs 50 ms ahead
    maps["worker1"] = type(skewed)(skewed.host, skewed.step_method, table, skewed.by_kind, skewed.clock,
                                   skewed.collective_percent)
    assert combine_hosts(maps, align_clocks=False).straggler.host == "worker1"  # what a raw clock says
    cross = combine_hosts(maps)
    assert cross.straggler.host == "worker2"
    offsets = cross.per_host.set_index("host")["clock_offset_us"]
    assert 45_000 < offsets["worker1"] < 55_000 and abs(offsets["worker0"]) < 5_000


@pytest.mark.parametrize("case", ["multihost_slow_host", "multihost_balanced"])
def test_per_step_breakdown_has_the_collective_part_of_the_aggregate(analyses, case):
    """Each step's collective time is its own part, not compute, and the steps add up to the
    aggregate (before, the per-step compute held the collectives: 17.6 % of step time where the
    aggregate said compute 1.3 % + collective 16.3 %); the HTML step chart draws that part."""
    from tpudoctor.rendering import render

    report = analyses[case]
    for name, host in report.hosts.items():
        per_step = pd.DataFrame(host.breakdown.per_step)
        assert "collective_ms" in per_step.columns, name
        assert (per_step["collective_ms"] > 0).all(), name  # one all-reduce every step
        parts = [c for c in per_step.columns if c.endswith("_ms") and c != "step_ms"]
        assert per_step[parts].sum(axis=1).to_numpy() == pytest.approx(per_step["step_ms"].to_numpy(), rel=1e-3)
        total = per_step["step_ms"].sum()
        for part in ("collective", "compute"):
            assert 100 * per_step[f"{part}_ms"].sum() / total == pytest.approx(host.breakdown.part(part), abs=0.05), \
                (name, part)
    html = render(report.to_dict(), "html")
    chart = html.split("<h2>Steps</h2>", 1)[1].split("<h2>", 1)[0]
    assert "<title>step 0: collective " in chart and chart.count(": collective ") >= 12  # a span each step
