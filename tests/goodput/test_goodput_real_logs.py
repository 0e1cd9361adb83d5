"""goodput on real training logs (tests/data/logs/training/: MaxText on TPU and GPU, TPUEstimator and Mesh-TF T5,
torch_xla, TF2 Model Garden, Keras, EasyDeL), each read by hand first (manifest.toml): the step lines, the first
and last step, whether the lines carry a clock, how many sessions the log shows, whether it died before its first
step. Issue 28's three misreadings each have a case here: a job that died before step 0 (0 steps, not unknown), a
time-of-day column read as a dated clock in 1970 (torch_xla's Time=: now a clock with no date, issue 41), and a new session after an
error (TPUEstimator's "a new session will be created").
"""

from __future__ import annotations

import sys

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from paths import TESTS

from tpudoctor.goodput.analyze import analyze_paths

TRAINING = TESTS / "data" / "logs" / "training"
LOGS = tomllib.loads((TRAINING / "manifest.toml").read_text(encoding="utf-8"))["log"]


@pytest.mark.parametrize("log", LOGS, ids=lambda log: log["file"].removesuffix(".log"))
def test_goodput_reads_a_real_log_as_a_person_does(log):
    doc = analyze_paths([str(TRAINING / log["file"])])
    g = doc["goodput"]
    step_lines = doc["workers"][0]["step_lines"] if doc["workers"] else 0
    assert step_lines == log["steps_logged"], log["notes"]
    if log["steps_logged"]:
        assert (g["first_step"], g["last_step"]) == (log["first_step"], log["last_step"])
        assert g["reached_first_step"] is True
    if log["died_before_first_step"]:
        assert g["steps"] == 0 and g["reached_first_step"] is False
        assert any("no training step ran" in n for n in g["notes"])
    if log["timestamps"] == "full":
        assert doc["wall_start"] is not None and not doc["wall_start"].startswith("1970")
        if g["ettr"] is None:
            assert g["nulls"]["ettr"], "an unknown ETTR says why"
    elif log["timestamps"] == "time-of-day":  # a clock with no date: the window's wall time, no date
        assert g["wall_s"] is not None and doc["wall_start"] is None and g["clock"]["kind"] == "time of day"
        assert g["consistency"]["confidence"]["level"] != "high"
    else:  # a duration or nothing: no clock, so no wall time and no ETTR
        assert g["wall_s"] is None and g["ettr"] is None and doc["wall_start"] is None
        assert g["nulls"]["wall_s"]
    announced = sum("the log ends before that session's first line" in n for n in g["notes"])
    assert (g["restarts"] or 0) + announced == log["sessions"] - 1
    if log["crashed"]:
        assert g["failures"], "the error that ended the job is in the account"
    else:
        assert g["failures"] == [], g["failures"]
    # ETTR is never a confident 0 or 1 that the log cannot support
    if g["ettr"] is not None:
        assert g["median_step_s"] is not None
        assert 0.0 < g["ettr"] < 1.0 or g["ettr_interval"][0] < g["ettr"], "a 1.0 comes with the clock's interval"


def test_a_time_of_day_column_is_a_clock_with_no_date():
    """torch_xla's MNIST on 4 devices: 13 lines, 4 steps (each printed by every device), Time=07:29:39 a time of
    day. Read before issue 28 as ETTR 0.75 over a wall time dated 1970-01-01; under issue 28 as no clock; now
    (issue 41) the window 07:29:39 -> 07:29:43 is the wall (4 s), all steps (ETTR 1.0), no date, the ETTR's
    interval from the clock's whole seconds."""
    doc = analyze_paths([str(TRAINING / "torchxla_mnist_4dev_timeofday.log")])
    g = doc["goodput"]
    assert doc["workers"][0]["step_lines"] == 4 and (g["first_step"], g["last_step"]) == (280, 340)
    assert g["wall_s"] == 4.0 and g["ettr"] == 1.0 and doc["wall_start"] is None
    assert g["ettr_interval"] == [0.3333, 1.0]
    assert not any("HF Trainer" in n for n in g["notes"])


def test_torch_xla_start_up_before_step_0_is_in_the_window():
    """torch_xla's ImageNet on GPU (docs/gpu.md): 'Epoch 1 train begin 06:12:38', step 0 at 06:13:23, step 120 at
    06:14:09: a 91 s window of which 45 s start-up before step 0 (before: 46 s from step 0, the start-up unseen)."""
    g = analyze_paths([str(TRAINING / "torchxla_imagenet_gpu_doc_timeofday.log")])["goodput"]
    assert g["wall_s"] == 91.0 and 0.40 < g["ettr"] < 0.48


def test_a_job_that_died_compiling_ran_zero_steps():
    doc = analyze_paths([str(TRAINING / "easydel_v2_8_compile_oom_before_step0.log")])
    assert doc["goodput"]["steps"] == 0 and "RESOURCE_EXHAUSTED" in doc["goodput"]["failures"][0]["text"]


def test_a_new_session_after_an_error_is_a_restart(tmp_path):
    """The Mesh-TF T5 log ends on TPUEstimator's 'a new session will be created'; with the new session's lines
    after it (TPUEstimator's restore and step lines as it prints them) it is a second run."""
    text = (TRAINING / "t5_meshtf_11b_ckpt_gcs503_new_session.log").read_text(encoding="utf-8")
    doc = analyze_paths([str(TRAINING / "t5_meshtf_11b_ckpt_gcs503_new_session.log")])
    assert doc["goodput"]["restarts"] == 0 and doc["goodput"]["runs"][0]["end_reason"].startswith("failure; the session")
    more = tmp_path / "t5.log"
    more.write_text(text + (
        "I0626 06:05:41.118270 139703188657984 saver.py:1284] Restoring parameters from gs://xxxxxxxx/11b/model.ckpt-8200\n"
        "I0626 06:07:02.410221 139703188657984 basic_session_run_hooks.py:260] loss = 1.3671875, step = 8300\n"
        "I0626 06:08:44.519810 139703188657984 basic_session_run_hooks.py:260] loss = 1.359375, step = 8400 (102.110 sec)\n"),
        encoding="utf-8")
    g = analyze_paths([str(more)])["goodput"]
    assert g["restarts"] == 1
    assert g["runs"][1]["start_reason"].startswith("a new session after the error at")


def test_the_log_diagnosis_never_calls_a_crashed_training_log_clean():
    from tpudoctor.logdiag import diagnose_file

    crashed = [log["file"] for log in LOGS if log["crashed"]]
    assert len(crashed) >= 4
    assert [f for f in crashed if not diagnose_file(TRAINING / f)] == []
