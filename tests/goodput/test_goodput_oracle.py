"""``tpudoctor goodput --goodput-job`` against ml-goodput-measurement itself (the oracle for its own entries).

The library's own GoodputRecorder writes each job into the fake Cloud Logging (through the real
google-cloud-logging client and its background transport), Orbax-shaped checkpoint entries go beside them,
then the library's GoodputCalculator and tpudoctor's CLI read the same entries. They must agree on wall time,
productive time, goodput and every badput bucket, in seconds and in percent of wall time, to within tpudoctor's
rounding of its figures (seconds to 3 decimals, percent to 2): ``SECONDS_TOL`` and ``POINTS_TOL``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("ml_goodput_measurement")

from tpudoctor.goodput.recorder import recorder_account  # noqa: E402
from tpudoctor.testing.fake_logging import FakeLoggingServer  # noqa: E402
from tpudoctor.testing.goodput_oracle import LIBRARY_BUCKETS, SCENARIOS, at, side_by_side  # noqa: E402

SECONDS_TOL = 0.0006
"""tpudoctor rounds seconds to 3 decimals: at most 0.0005 s apart, plus float noise."""
POINTS_TOL = 0.0051
"""tpudoctor rounds percentages to 2 decimals: at most 0.005 percentage points apart, plus float noise."""


@pytest.fixture(scope="module")
def fake():
    with FakeLoggingServer(page_size=100) as server, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TPUDOCTOR_LOGGING_ENDPOINT", server.endpoint)
        yield server


@pytest.fixture(scope="module")
def results(fake, tmp_path_factory):
    out = tmp_path_factory.mktemp("oracle")
    return {name: side_by_side(fake, name, out) for name in SCENARIOS}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_tpudoctor_agrees_with_the_library(results, scenario):
    lib, ours, _inst = results[scenario]
    assert ours.wall_s == pytest.approx(lib.wall_s, abs=SECONDS_TOL)
    assert ours.productive_s == pytest.approx(lib.productive_s, abs=SECONDS_TOL)
    assert ours.goodput_percent == pytest.approx(lib.goodput_percent, abs=POINTS_TOL)
    for bucket in LIBRARY_BUCKETS:
        assert ours.seconds[bucket] == pytest.approx(lib.seconds[bucket], abs=SECONDS_TOL), bucket
        assert ours.percent[bucket] == pytest.approx(lib.percent[bucket], abs=POINTS_TOL), bucket
    assert ours.custom_s.keys() == lib.custom_s.keys()
    for kind, seconds in lib.custom_s.items():
        assert ours.custom_s[kind] == pytest.approx(seconds, abs=SECONDS_TOL)
    assert ours.disruptions == lib.disruptions
    assert ours.max_productive_step == lib.max_productive_step


def test_the_entries_are_the_recorders_own(fake, results):
    """What tpudoctor read is what the library's recorder wrote (its logger's label), as many as were written."""
    for scenario, (_lib, _ours, inst) in results.items():
        written = [e for e in fake.entries if e.get("jsonPayload", {}).get("job_name") == f"oracle-{scenario}"]
        assert inst["entries"] == len(written) > 0
        from_recorder = [e for e in written if "event_type" not in e["jsonPayload"]]
        assert from_recorder and all(e["labels"]["python_logger"].startswith("_ml_goodput_async.")
                                     for e in from_recorder)
        assert all(e["severity"] == "INFO" and e["logName"] == "projects/my-project/logs/goodput" for e in written)


def test_each_scenario_exercises_what_it_is_named_for(results):
    """Guards the scenarios themselves: agreement on all-zero buckets would prove little."""
    clean, restarted = results["clean"][0], results["preempted-restarted"][0]
    data, saves = results["long-data-loading"][0], results["slow-checkpoint-saves"][0]
    assert clean.disruptions == 0 and clean.seconds["PROGRAM_STARTUP"] > 100 and clean.seconds["OTHER"] > 0
    assert clean.seconds["DATA_LOADING_SYNC"] == pytest.approx(14.0)  # the in-loop loads are async
    assert restarted.disruptions == 1
    assert restarted.seconds["WASTED_PROGRESS_FROM_DISRUPTION"] == pytest.approx(17 * 2.5)  # steps 100..116
    assert restarted.seconds["INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION"] == pytest.approx(242.9)
    assert restarted.seconds["UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME"] == pytest.approx(38.0)
    # three 25 s evaluations, after steps 29, 59 and 89; the last one lies after the last recorded step start,
    # where the library counts the time up to the job's end as the last step's: productive, not custom badput
    assert data.seconds["DATA_LOADING_SYNC"] == pytest.approx(540.0) and data.custom_s == {"EVAL_STEP": 50.0}
    # four gs:// saves averaged over two workers (48 and 50 s) and one local 3 s save
    assert saves.seconds["UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"] == pytest.approx(4 * 49.0 + 3.0)


def test_the_comparison_with_the_log_says_there_is_no_log(results):
    """These jobs wrote only recorder entries: the log's account has nothing to set against them."""
    inst = results["clean"][2]
    assert all(r["agree"] is None for r in inst["rows"] if r["figure"] in ("wall_s", "productive_s", "ettr"))


def _ts(seconds: float) -> float:
    return at(seconds).timestamp()


def test_no_job_start_means_no_wall_time():
    account = recorder_account([{"job_name": "j", "step_count": 0, "step_start_time": _ts(0)},
                                {"job_name": "j", "step_count": 1, "step_start_time": _ts(5)}], now=_ts(100))
    assert account["wall_s"] is None and account["ettr"] is None
    assert "no job_start_time" in account["nulls"]["wall_s"]


def test_a_job_without_an_end_runs_to_the_time_of_reading():
    """The library counts a job with no recorded end up to its query time; so does tpudoctor, and says so."""
    account = recorder_account([{"job_name": "j", "job_start_time": _ts(0)},
                                {"job_name": "j", "step_count": 0, "step_start_time": _ts(10)},
                                {"job_name": "j", "step_count": 1, "step_start_time": _ts(20)},
                                {"job_name": "j", "step_count": 2, "step_start_time": _ts(22)}], now=_ts(100))
    assert account["wall_s"] == 100.0
    # intervals 10 s (the first: 8 s over the mean of the others is PROGRAM_STARTUP) and 2 s; step 2 has no end
    assert account["productive_s"] == 4.0 and account["badput"]["PROGRAM_STARTUP"]["seconds"] == 8.0
    assert any("no job_end_time" in n for n in account["notes"])


def test_productive_time_beyond_the_wall_time_is_refused():
    """Step starts after the recorded end: the library raises; tpudoctor gives no ETTR and says why."""
    account = recorder_account([{"job_name": "j", "job_start_time": _ts(0)},
                                {"job_name": "j", "step_count": 0, "step_start_time": _ts(1)},
                                {"job_name": "j", "step_count": 1, "step_start_time": _ts(50)},
                                {"job_name": "j", "step_count": 2, "step_start_time": _ts(60)},
                                {"job_name": "j", "job_end_time": _ts(20)}], now=_ts(100))
    assert account["productive_s"] is None and "library rejects" in account["nulls"]["productive_s"]
