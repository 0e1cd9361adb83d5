from __future__ import annotations

import time

import engine_fixtures as ef
import pytest

from tpudoctor.context import RunContext
from tpudoctor.families import Registry
from tpudoctor.findings import Status
from tpudoctor.runner import Runner


def make_registry(*checks):
    providers = {}
    for cls in (ef.NodeFacts, ef.BarrierA, ef.BarrierB, ef.CrashingProvider, ef.HangingProvider, ef.NotHereProvider):
        for key in cls.provides:
            providers[key] = cls
    return Registry(checks={c.id: c for c in checks}, providers=providers)


def run(*checks, run_timeout_s=30.0):
    registry = make_registry(*checks)
    report = Runner(registry, RunContext(run_timeout_s=run_timeout_s)).run(checks)
    return {r.id: r for r in report.results}, report


def test_failed_requirement_blocks_dependants_as_one_root_cause():
    results, report = run(ef.NodeReady, ef.NeedsNode)
    assert results["ENG-001"].status is Status.FAIL
    assert results["ENG-002"].status is Status.SKIP
    assert results["ENG-002"].skip_reason == "blocked by ENG-001 (FAIL)"
    assert report.summary.root_cause == "ENG-001"
    assert report.summary.counts["FAIL"] == 1


def test_requirement_outside_the_selection_does_not_block():
    results, _ = run(ef.NeedsNode)
    assert results["ENG-002"].status is Status.PASS


def test_crash_becomes_error_with_exception_and_the_run_goes_on():
    results, _ = run(ef.Crashes, ef.NodeReady)
    crashed = results["ENG-003"]
    assert crashed.status is Status.ERROR
    assert "KeyError" in crashed.evidence["exception"]
    assert "Traceback" in crashed.evidence["traceback"]
    assert results["ENG-001"].status is Status.FAIL


def test_check_timeout_becomes_error():
    results, _ = run(ef.Hangs, ef.NodeReady)
    assert results["ENG-004"].status is Status.ERROR
    assert "did not finish within" in results["ENG-004"].message
    assert results["ENG-001"].status is Status.FAIL


def test_provider_crash_and_timeout_become_errors_not_skips():
    results, _ = run(ef.ReadsCrashFact, ef.ReadsSlowFact)
    assert results["ENG-005"].status is Status.ERROR
    assert "ConnectionResetError" in results["ENG-005"].message
    assert results["ENG-006"].status is Status.ERROR
    assert results["ENG-006"].evidence["timed_out"] is True


def test_unavailable_fact_is_skip_with_the_providers_reason():
    results, _ = run(ef.ReadsTpuVm)
    assert results["ENG-007"].status is Status.SKIP
    assert results["ENG-007"].skip_reason == "not running on a TPU VM"


def test_independent_providers_gather_concurrently():
    # Each provider waits on a two-party barrier: serial gathering would break it.
    results, _ = run(ef.UsesBoth)
    assert results["ENG-008"].status is Status.PASS, results["ENG-008"].message
    assert results["ENG-008"].message == "sum 3"


def test_whole_run_deadline_turns_remaining_checks_into_errors():
    # The hanging provider eats the whole 0.25 s budget; the later step has no time left.
    results, _ = run(ef.ReadsSlowFact, ef.UsesBoth, run_timeout_s=0.25)
    assert results["ENG-006"].status is Status.ERROR
    assert results["ENG-008"].status is Status.ERROR
    assert "time limit" in results["ENG-008"].message


def test_results_come_back_in_step_order():
    _, report = run(ef.UsesBoth, ef.WarnsOnly, ef.NodeReady)
    assert [r.id for r in report.ordered_results()] == ["ENG-001", "ENG-009", "ENG-008"]


@pytest.mark.parametrize("bad", [None, "text"])
def test_a_check_that_returns_garbage_is_an_error(bad):
    class Garbage(ef._Base):
        """Returns the wrong type."""

        id = "ENG-010"
        title = "garbage"
        facts = ("engine.node_state",)

        def evaluate(self, facts):
            return bad

    results, _ = run(Garbage)
    assert results["ENG-010"].status is Status.ERROR


def test_gathering_time_is_billed_once_to_the_first_check_that_read_it():
    class SlowFacts(ef.NodeFacts):
        name = "engine.slow_node"

        def gather(self, ctx, facts):
            import time

            time.sleep(0.2)
            return super().gather(ctx, facts)

    registry = make_registry(ef.NodeReady, ef.WarnsOnly)
    registry.providers["engine.node_state"] = SlowFacts
    report = Runner(registry, RunContext()).run([ef.NodeReady, ef.WarnsOnly])
    durations = {r.id: r.duration_s for r in report.results}
    assert durations["ENG-001"] >= 0.2
    assert durations["ENG-009"] < 0.2


def test_a_provider_returning_undeclared_facts_is_an_error_naming_them():
    class LeakyFacts(ef.NodeFacts):
        name = "engine.leaky_node"

        def gather(self, ctx, facts):
            return {"engine.node_state": "READY", "engine.typo_state": "READY", "engine.other": 1}

    registry = make_registry(ef.NodeReady)
    registry.providers["engine.node_state"] = LeakyFacts
    report = Runner(registry, RunContext()).run([ef.NodeReady])
    result = report.results[0]
    assert result.status is Status.ERROR
    assert "engine.other, engine.typo_state" in result.message
    assert "does not declare" in result.message
    assert result.evidence["provider"] == "engine.leaky_node"


class _OnlyWhenNodeIsReady(ef.NodeReady):
    """Says something only about a READY node."""

    id = "ENG-010"

    def applies(self, facts):
        return facts.value("engine.node_state") == "READY"


def test_a_check_that_does_not_apply_gives_no_result_and_the_others_run():
    results, report = run(_OnlyWhenNodeIsReady, ef.NodeReady, ef.WarnsOnly)  # the node is PREEMPTED
    assert [r.id for r in report.results] == ["ENG-001", "ENG-009"]
    assert results["ENG-001"].status is Status.FAIL and report.summary.root_cause == "ENG-001"


def test_where_the_run_happened_is_a_providers_fact_recorded_even_past_the_deadline():
    from tpudoctor.findings import Target
    from tpudoctor.providers.report_environment import ReportEnvironmentProvider

    registry = make_registry(ef.NodeReady)
    registry.providers["report.environment"] = ReportEnvironmentProvider
    ctx = RunContext(target=Target(worker="3"), run_timeout_s=0.001)
    time.sleep(0.01)  # the run's time is up before it starts
    report = Runner(registry, ctx).run([ef.NodeReady])
    assert report.results[0].status is Status.ERROR  # the check had no time left
    assert report.environment["worker"] == "3" and report.environment["python"]
    assert isinstance(report.environment["packages"], dict)
