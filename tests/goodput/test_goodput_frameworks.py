"""Goodput from log excerpts in the shapes each framework prints (lines as printed: absl/glog prefixes,
``INFO:tensorflow:`` duplicates, ANSI colour, per-device copies), each figure worked out by hand in the test."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import TESTS

from tpudoctor.goodput.analyze import analyze_paths
from tpudoctor.goodput.line_patterns import Kind
from tpudoctor.goodput.lines import read_events
from tpudoctor.goodput.readers import READERS
from tpudoctor.logs.clock import Clock

FIXTURES = TESTS / "fixtures" / "goodput"


def run(tmp_path: Path, text: str, name: str = "train.log", **kw) -> dict:
    path = tmp_path / name
    path.write_text(text)
    return analyze_paths([str(path)], **kw)


def bucket(doc: dict, name: str) -> float | None:
    return doc["goodput"]["badput"][name]["seconds"]


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.framework)
def test_every_example_line_of_every_reader_is_read(reader):
    """Each framework's documented lines (as printed) give an event of the pattern they document."""
    for line in reader.example_lines:
        events = list(read_events([line], "x", readers=(reader,)))
        assert events, f"{reader.framework}: no event from {line!r}"


def test_maxtext_restart_with_async_and_sync_saves_hand_checked():
    """tests/fixtures/goodput/maxtext_restart.log, by hand (times are 2024-08-13, UTC):
    start 1: XPK Start 10:00:00, JAX backend up 10:01:00 (init 60 s), no checkpoint 10:02:00 (prep 60 s),
      step 0 at 10:04:00 (120 s: one 10 s median step productive, 110 s compilation), steps 1-9 every 10 s,
      async save at step 9 blocking 2.00 s (step 10 line 12 s later), steps 11-14, chip failure, XPK End
      10:06:45: 23 s after step 14 lost; steps 10-14 (50 s productive) redone after the restart.
    down 10:06:45 -> XPK Start 10:08:45: 120 s recovery.
    start 2: init 60 s, prep 30 s, restore 40 s (Orbax 'Finished load in 40.00 seconds'), step 10 at 10:12:55
      (120 s: 110 compilation), steps 11-20 (100 s), sync save 15.00 s, step 21 25 s after step 20 (10 s
      productive), steps 22-25 (40 s), XPK End 10:16:00: 20 s after the last step.
    wall 960 s; productive 100 + 160 = 260 s."""
    doc = analyze_paths([str(FIXTURES / "maxtext_restart.log")])
    g = doc["goodput"]
    assert g["wall_s"] == 960.0
    assert g["productive_s"] == 260.0
    assert g["ettr"] == round(260 / 960, 4)
    assert (g["steps"], g["first_step"], g["last_step"]) == (26, 0, 25)
    assert (g["restarts"], g["repeated_steps"], g["checkpoint_saves"]) == (1, 5, 2)
    assert (g["checkpoint_saves_sync"], g["checkpoint_saves_async"]) == (1, 1)
    assert g["median_step_s"] == 10.0
    expected = {"TPU_INITIALIZATION": 120.0, "TRAINING_PREP": 90.0, "PROGRAM_STARTUP": 220.0,
                "DATA_LOADING_SYNC": 0.0, "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME": 17.0,
                "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME": 40.0, "WASTED_PROGRESS_FROM_DISRUPTION": 73.0,
                "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION": 120.0, "OTHER": 20.0}
    assert {k: bucket(doc, k) for k in expected} == expected
    assert sum(expected.values()) + g["productive_s"] == g["wall_s"]
    assert g["badput"]["PROGRAM_STARTUP"]["percent"] == round(100 * 220 / 960, 2)
    saves = {s["step"]: s for s in g["saves"]}
    assert saves[9]["mode"] == "async" and saves[9]["blocking_s"] == 2.0 and saves[9]["total_s"] == 19.8
    assert saves[20]["mode"] == "sync" and saves[20]["blocking_s"] == 15.0
    runs = g["runs"]
    assert runs[0]["end_reason"] == "exit code 1" and runs[1]["end_reason"] == "exit code 0"
    assert "XPK Start" in runs[1]["start_reason"]
    assert g["failures"][0]["text"].startswith("E0813 10:06:40.000000 2501 pjrt_stream_executor_client.cc")
    ids = {f["id"]: f["status"] for f in doc["findings"]}
    assert ids["compilation"] == "FAIL" and ids["frequent-restarts"] == "FAIL"
    assert ids["checkpoint-saves"] == "PASS"


# The real run from MaxText's "Understand logs and metrics" guide: plain lines (no prefix), so no wall clock.
MAXTEXT_PLAIN = """\
completed step: 0, seconds: 44.923, TFLOP/s/device: 17.022, Tokens/s/device: 1094.129, total_weights: 196608, loss: 12.038
completed step: 1, seconds: 0.319, TFLOP/s/device: 2400.734, Tokens/s/device: 154316.608, total_weights: 196608, loss: 12.038
completed step: 2, seconds: 5.658, TFLOP/s/device: 135.158, Tokens/s/device: 8687.815, total_weights: 196608, loss: 11.689
completed step: 3, seconds: 5.402, TFLOP/s/device: 141.542, Tokens/s/device: 9098.189, total_weights: 196608, loss: 11.379
completed step: 4, seconds: 5.669, TFLOP/s/device: 134.884, Tokens/s/device: 8670.207, total_weights: 196608, loss: 11.110
completed step: 5, seconds: 5.668, TFLOP/s/device: 134.909, Tokens/s/device: 8671.794, total_weights: 196608, loss: 10.879
completed step: 6, seconds: 5.668, TFLOP/s/device: 134.914, Tokens/s/device: 8672.153, total_weights: 196608, loss: 10.688
completed step: 7, seconds: 5.669, TFLOP/s/device: 134.882, Tokens/s/device: 8670.101, total_weights: 196608, loss: 10.542
completed step: 8, seconds: 5.668, TFLOP/s/device: 134.911, Tokens/s/device: 8671.946, total_weights: 196608, loss: 10.440
completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, Tokens/s/device: 8672.758, total_weights: 196608, loss: 10.374
"""


def test_maxtext_without_timestamps_gives_no_wall_time_and_says_why(tmp_path):
    """The `seconds:` trap: step 1's 0.319 s is the time since step 0's line (dispatch is asynchronous), not
    a step; the sum (90.311 s) is not wall time. Without timestamps wall time, ETTR and the buckets are
    null with the reason; the median of steps 1-9 (sorted 0.319, 5.402, 5.658, 5.667, 5.668, 5.668,
    5.668, 5.669, 5.669) is 5.668 s, from the lines' own durations."""
    doc = run(tmp_path, MAXTEXT_PLAIN)
    g = doc["goodput"]
    assert g["wall_s"] is None and g["ettr"] is None and g["productive_s"] is None
    assert "no timestamps" in g["nulls"]["wall_s"] and "`seconds:`" in g["nulls"]["wall_s"]
    assert g["median_step_s"] == 5.668 and g["step_time_source"] == "reported"
    assert g["reported_step_seconds_sum"] == 90.311
    assert (g["steps"], g["first_step"], g["last_step"]) == (10, 0, 9)
    assert all(v["seconds"] is None and v["reason"] for v in g["badput"].values())
    measurable = next(f for f in doc["findings"] if f["id"] == "goodput-measurable")
    assert measurable["status"] == "WARN" and "no timestamps" in measurable["message"]
    assert next(f for f in doc["findings"] if f["id"] == "compilation")["status"] == "SKIP"


def test_seconds_trap_with_timestamps_stall_lands_in_the_next_step_line(tmp_path):
    """A 60 s stall after step 2 (a profiler start) shows in step 3's `seconds:` and in the 70 s between
    the step 2 and step 3 lines; timestamps make it 60 s of OTHER (an outlier, nothing says why), and the
    sum of `seconds:` (10+10+70+10 = 100) differs from the 90 s between the first and last step lines + 10."""
    lines = []
    times = ["12:00:10", "12:00:20", "12:01:30", "12:01:40"]
    secs = [10.0, 10.0, 70.0, 10.0]
    for n, (t, s) in enumerate(zip(times, secs, strict=True), start=1):
        lines.append(f"I0301 {t}.000000 1 metric_logger.py:226] completed step: {n}, seconds: {s:.3f}, "
                     "TFLOP/s/device: 100.0, Tokens/s/device: 5000.0, total_weights: 8192, loss: 9.9")
    doc = run(tmp_path, "I0301 12:00:00.000000 1 max_utils.py:95] System Information: Jax Version: 0.4.35\n"
              + "\n".join(lines) + "\n", year=2025)
    g = doc["goodput"]
    assert g["wall_s"] == 100.0
    assert g["median_step_s"] == 10.0
    assert g["outlier_steps"][0]["step"] == 3 and g["outlier_steps"][0]["excess_s"] == 60.0
    assert bucket(doc, "OTHER") == 60.0
    assert g["reported_step_seconds_sum"] == 100.0 and g["step_span_s"] == 90.0
    assert g["productive_s"] == 40.0  # steps 1..4, 10 s each


TPUESTIMATOR = """\
INFO:tensorflow:Init TPU system
I0326 17:00:00.000000 140456655849280 tpu_estimator.py:431] Init TPU system
INFO:tensorflow:Initialized TPU in 7 seconds
I0326 17:00:07.000000 140456655849280 tpu_estimator.py:439] Initialized TPU in 7 seconds
INFO:tensorflow:Done running local_init_op.
I0326 17:01:00.000000 140456655849280 session_manager.py:505] Done running local_init_op.
INFO:tensorflow:loss = 7.1043, step = 100
I0326 17:03:00.000000 140456655849280 basic_session_run_hooks.py:262] loss = 7.1043, step = 100
INFO:tensorflow:global_step/sec: 2
I0326 17:03:50.000000 140456655849280 tpu_estimator.py:2307] global_step/sec: 2
INFO:tensorflow:loss = 5.2101, step = 200 (50.000 sec)
I0326 17:03:50.000000 140456655849280 basic_session_run_hooks.py:260] loss = 5.2101, step = 200 (50.000 sec)
INFO:tensorflow:loss = 4.9, step = 300 (50.000 sec)
I0326 17:04:40.000000 140456655849280 basic_session_run_hooks.py:260] loss = 4.9, step = 300 (50.000 sec)
INFO:tensorflow:Saving checkpoints for 300 into gs://bucket/model/model.ckpt.
I0326 17:04:40.100000 140456655849280 basic_session_run_hooks.py:606] Saving checkpoints for 300 into gs://bucket/model/model.ckpt.
INFO:tensorflow:loss = 4.7, step = 400 (60.000 sec)
I0326 17:05:40.000000 140456655849280 basic_session_run_hooks.py:260] loss = 4.7, step = 400 (60.000 sec)
INFO:tensorflow:An error was raised. This may be due to a preemption in a connected worker or parameter server. The current session will be closed and a new session will be created. This error may also occur due to a gRPC failure caused by high memory or network bandwidth usage in the parameter servers. If this error occurs repeatedly, try increasing the number of parameter servers assigned to the job. Error: Socket closed
I0326 17:06:00.000000 140456655849280 monitored_session.py:1286] An error was raised. This may be due to a preemption in a connected worker or parameter server. The current session will be closed and a new session will be created. Error: Socket closed
INFO:tensorflow:Restoring parameters from gs://bucket/model/model.ckpt-300
I0326 17:06:30.000000 140456655849280 saver.py:1284] Restoring parameters from gs://bucket/model/model.ckpt-300
INFO:tensorflow:loss = 4.8, step = 400
I0326 17:08:30.000000 140456655849280 basic_session_run_hooks.py:262] loss = 4.8, step = 400
INFO:tensorflow:loss = 4.5, step = 500 (50.000 sec)
I0326 17:09:20.000000 140456655849280 basic_session_run_hooks.py:260] loss = 4.5, step = 500 (50.000 sec)
INFO:tensorflow:Saving checkpoints for 500 into gs://bucket/model/model.ckpt.
I0326 17:09:20.100000 140456655849280 basic_session_run_hooks.py:606] Saving checkpoints for 500 into gs://bucket/model/model.ckpt.
INFO:tensorflow:loss = 4.4, step = 600 (50.000 sec)
I0326 17:10:10.000000 140456655849280 basic_session_run_hooks.py:260] loss = 4.4, step = 600 (50.000 sec)
INFO:tensorflow:Loss for final step: 4.4.
I0326 17:10:20.000000 140456655849280 estimator.py:350] Loss for final step: 4.4.
"""


def test_tpuestimator_preemption_restart_hand_checked(tmp_path):
    """Each line twice (INFO:tensorflow: then absl), logged every 100 steps; median 0.5 s/step.
    start 1: 17:00:00, TPU initialised in 7 s, local_init_op at 17:01:00 (prep 53 s), step 100 at 17:03:00
      (120 s: 100 steps x 0.5 = 50 s productive, 70 s compilation), steps 200, 300 (50 s each), a sync save
      at step 300 whose end is not printed: step 400's interval is 60 s, so the save is the 10 s excess
      (estimated); preemption at 17:06:00: 20 s after step 400 lost, and steps 301-400 (50 s) redone.
    down 17:06:00 -> restore at 17:06:30: 30 s.
    start 2: the restore has no end line, so restore and compilation are not split: step 400 at 17:08:30
      (120 s: 50 productive, 70 compilation), steps 500, 600 (100 s; the save at 500 took no visible time),
      17:10:20 the last line: 10 s after the last step.
    wall 620 s; productive 50 + 100 + 50 + 100 = 300 s."""
    doc = run(tmp_path, TPUESTIMATOR, year=2020)
    g = doc["goodput"]
    assert g["wall_s"] == 620.0 and g["productive_s"] == 300.0
    assert g["median_step_s"] == 0.5
    assert (g["restarts"], g["repeated_steps"]) == (1, 100)
    expected = {"TPU_INITIALIZATION": 7.0, "TRAINING_PREP": 53.0, "PROGRAM_STARTUP": 140.0,
                "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME": 10.0, "WASTED_PROGRESS_FROM_DISRUPTION": 70.0,
                "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION": 30.0, "OTHER": 10.0,
                "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME": 0.0, "DATA_LOADING_SYNC": 0.0}
    assert {k: bucket(doc, k) for k in expected} == expected
    assert g["badput"]["UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"]["estimated"] is True
    assert g["saves"][0]["blocking_source"] == "estimated" and g["saves"][0]["mode"] == "sync"
    assert any("no line says when it ended" in n for n in g["notes"])
    assert g["runs"][0]["end_reason"] == "failure; the session was closed and a new one created"


ORBIT = """\
I1231 23:58:00.000000 139 controller.py:430] restoring or initializing model...
restoring or initializing model...
I1231 23:58:30.000000 139 controller.py:440] restored model from gs://b/model/ckpt-1000.
restored model from gs://b/model/ckpt-1000.
I1231 23:58:30.100000 139 controller.py:292] train | step:   1000 | training until step 1300...
train | step:   1000 | training until step 1300...
I1231 23:59:50.000000 139 controller.py:476] train | step:   1100 | steps/sec:    2.0 | output: {'training_loss': 2.08}
train | step:   1100 | steps/sec:    2.0 | output: {'training_loss': 2.08}
I1231 23:59:50.100000 139 controller.py:495] saved checkpoint to gs://b/model/ckpt-1100.
saved checkpoint to gs://b/model/ckpt-1100.
I0101 00:00:50.000000 139 controller.py:476] train | step:   1200 | steps/sec:    1.7 | output: {'training_loss': 2.01}
train | step:   1200 | steps/sec:    1.7 | output: {'training_loss': 2.01}
I0101 00:01:40.000000 139 controller.py:476] train | step:   1300 | steps/sec:    2.0 | output: {'training_loss': 1.98}
train | step:   1300 | steps/sec:    2.0 | output: {'training_loss': 1.98}
"""


def test_tf2_orbit_across_new_year_hand_checked(tmp_path):
    """Orbit prints each line twice (absl and print). glog has no year: the log crosses New Year
    (Dec 31 23:58 -> Jan 1 00:01:40), 220 s, not -364 days. Restore 30 s (23:58:00 -> 23:58:30), prep 0.1 s,
    step 1100 at 23:59:50 (79.9 s: 100 steps at 0.5 s/step = 50 s productive, 29.9 s compilation),
    step 1200 60 s later with the save between (10 s excess, estimated), step 1300 50 s."""
    doc = run(tmp_path, ORBIT, year=2024)
    g = doc["goodput"]
    assert doc["wall_start"] == "2024-12-31T23:58:00Z" and doc["wall_end"] == "2025-01-01T00:01:40Z"
    assert g["wall_s"] == 220.0
    assert g["median_step_s"] == 0.5 and (g["first_step"], g["last_step"]) == (1100, 1300)
    assert bucket(doc, "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME") == 30.0
    assert bucket(doc, "TRAINING_PREP") == 0.1
    assert bucket(doc, "PROGRAM_STARTUP") == 29.9
    assert bucket(doc, "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME") == 10.0
    assert g["productive_s"] == 150.0
    assert g["restores"][0]["step"] == 1000


def test_glog_year_comes_from_an_iso_line_and_is_said_when_assumed(tmp_path):
    doc = run(tmp_path, "2023-06-01 10:00:00,000 INFO launcher started\n"
              "I0601 10:00:10.000000 1 metric_logger.py:226] completed step: 1, seconds: 1.000, loss: 2\n")
    assert doc["wall_end"] == "2023-06-01T10:00:10Z" and doc["clock"]["year_from"] == ["log"]
    doc = run(tmp_path, "I0601 10:00:10.000000 1 metric_logger.py:226] completed step: 1, seconds: 1.000\n",
              name="b.log")
    assert doc["clock"]["year_from"] == ["assumed"]


TORCH_XLA = """\
| Training Device=xla:0/0 Epoch=1 Step=0 Loss=2.31000 Rate=0.00 GlobalRate=0.00 Time=23:59:00
| Training Device=xla:0/1 Epoch=1 Step=0 Loss=2.30411 Rate=0.00 GlobalRate=0.00 Time=23:59:00
| Training Device=xla:0/0 Epoch=1 Step=20 Loss=1.53212 Rate=410.20 GlobalRate=401.90 Time=23:59:40
| Training Device=xla:0/1 Epoch=1 Step=20 Loss=1.52001 Rate=409.77 GlobalRate=401.02 Time=23:59:40
| Training Device=xla:0/0 Epoch=1 Step=40 Loss=0.91234 Rate=412.02 GlobalRate=405.11 Time=00:00:20
| Training Device=xla:0/1 Epoch=1 Step=40 Loss=0.92001 Rate=411.88 GlobalRate=405.00 Time=00:00:20
"""


def test_torch_xla_per_device_lines_and_times_of_day_past_midnight(tmp_path):
    """One line per device (merged), `Time=` a time of day: 23:59:00 -> 00:00:20 is 80 s, not -86 320 s;
    20 steps per 40 s is 2 s/step. A time of day is the process's clock without a date (issue 41, which supersedes
    issue 28's "no clock"): it times the window from the first to the last clocked line, so the wall is 80 s of
    steps (ETTR 1.0), with no date (wall_start None), medium confidence, and the note that what ran before the
    first clocked line is on no line."""
    doc = run(tmp_path, TORCH_XLA)
    g = doc["goodput"]
    assert (g["steps"], g["first_step"], g["last_step"]) == (41, 0, 40)
    assert g["median_step_s"] == 2.0
    assert g["wall_s"] == 80.0 and g["ettr"] == 1.0 and g["step_span_s"] == 80.0
    assert doc["wall_start"] is None and doc["wall_end"] is None and g["clock"]["kind"] == "time of day"
    assert g["consistency"]["confidence"]["level"] == "medium"
    assert any("before the first clocked line" in n for n in g["notes"])
    assert g["ettr_interval"][0] < 1.0 == g["ettr_interval"][1]  # whole seconds: the two ends may be a tick off
    assert doc["workers"][0]["out_of_order_steps"] == 0


def test_a_whole_second_clock_is_no_evidence_of_a_slow_step(tmp_path):
    """torch_xla's MNIST (pytorch/xla#6026): steps 280, 300, 320, 340 at 07:29:39, :40, :42, :43. 20 steps read 1 s,
    2 s, 1 s on a clock that ticks in whole seconds: the 2 s may be 1.01 s, so it is no anomalous interval and
    nothing is charged to OTHER (before, ETTR 0.75 with 1 s of 'slow steps')."""
    lines = "".join(f"| Training Device=xla:0/0 Epoch=1 Step={n} Loss=0.1 Rate=1.0 GlobalRate=1.0 Time=07:29:{t}\n"
                    for n, t in ((280, 39), (300, 40), (320, 42), (340, 43)))
    g = run(tmp_path, lines)["goodput"]
    assert g["wall_s"] == 4.0 and g["ettr"] == 1.0 and g["outlier_count"] == 0
    slow = run(tmp_path, lines.replace("07:29:42", "07:29:45").replace("07:29:43", "07:29:46"), name="slow.log")
    assert slow["goodput"]["outlier_count"] == 1 and slow["goodput"]["ettr"] < 0.7  # 4 s for 20 steps is slow


def test_torch_xla_epoch_marks_bound_the_window(tmp_path):
    """The example scripts print 'Epoch 1 train begin HH:MM:SS' and 'Epoch 1 train end HH:MM:SS' on the same clock:
    the window runs from the begin to the end, start-up before the first step and the tail after the last
    step are not productive."""
    text = ("Epoch 1 train begin 22:02:59\n" + TORCH_XLA.replace("23:59:00", "22:03:20").replace("23:59:40", "22:03:24")
            .replace("00:00:20", "22:03:28") + "Epoch 1 train end 22:03:30\n")
    g = run(tmp_path, text)["goodput"]
    assert g["wall_s"] == 31.0 and g["restarts"] == 0
    assert g["productive_s"] == 8.0 + 0.2  # 40 steps of 0.2 s, and step 0's own 0.2 s at the end of start-up


LEVANTER = """\
2024-02-24T12:00:00 - 0 - levanter.main - train_lm.py:101 - INFO :: Starting training
2024-02-24T12:00:31 - 0 - levanter.checkpoint - checkpoint.py:330 - INFO :: Loading checkpoint from gs://levanter-checkpoints/llama2/run/step-9000
2024-02-24T12:02:31 - 0 - tqdm_loggable.tqdm_logging - tqdm_logging.py:139 - INFO :: Progress on:train 9.10k/10.0k rate:1.2it/s remaining:12:30 elapsed:02:00 postfix:loss=2.99
2024-02-24T12:04:11 - 0 - tqdm_loggable.tqdm_logging - tqdm_logging.py:139 - INFO :: Progress on:train 9.20k/10.0k rate:1.0it/s remaining:13:20 elapsed:03:40 postfix:loss=2.98
2024-02-24T12:04:11 - 0 - levanter.checkpoint - checkpoint.py:221 - INFO :: Saving checkpoint at step 9200 to gs://levanter-checkpoints/llama2/run/step-9200
2024-02-24T12:04:11 - 0 - levanter.checkpoint - checkpoint.py:246 - INFO :: Saving checkpoint to gs://levanter-checkpoints/llama2/run/step-9200 for step 9200
2024-02-24T12:04:12 - 3 - levanter.checkpoint - checkpoint.py:246 - INFO :: Saving checkpoint to gs://levanter-checkpoints/llama2/run/step-9200 for step 9200
2024-02-24T12:05:51 - 0 - tqdm_loggable.tqdm_logging - tqdm_logging.py:139 - INFO :: Progress on:train 9.30k/10.0k rate:1.0it/s remaining:11:40 elapsed:05:20 postfix:loss=2.97
2024-02-24T12:06:01 - 0 - levanter.checkpoint - checkpoint.py:277 - INFO :: Saved checkpoint to gs://levanter-checkpoints/llama2/run/step-9200 for step 9200
2024-02-24T12:07:31 - 0 - tqdm_loggable.tqdm_logging - tqdm_logging.py:139 - INFO :: Progress on:train 9.40k/10.0k rate:1.0it/s remaining:10:00 elapsed:07:00 postfix:loss=2.96
"""


def test_levanter_progress_lines_and_async_saves(tmp_path):
    """tqdm-loggable rounds steps to 3 digits (9.10k): steps are approximate and said so. 100 steps per
    100 s = 1 s/step; the async save's blocking part is the step interval's excess over the median (0 s:
    the interval after the save is 100 s). Loading from step-9000 at 12:00:31; first progress 12:02:31."""
    doc = run(tmp_path, LEVANTER)
    g = doc["goodput"]
    assert g["median_step_s"] == 1.0 and (g["first_step"], g["last_step"]) == (9100, 9400)
    assert g["wall_s"] == 451.0
    assert g["saves"][0]["step"] == 9200 and g["saves"][0]["mode"] == "async"
    assert g["checkpoint_saves"] == 1
    assert any("approximate" in n for n in g["notes"])
    assert g["restores"][0]["step"] == 9000


HF_TRAINER = """\
[INFO|trainer.py:2134] 2024-06-10 12:00:00,000 >> ***** Running training *****
[INFO|trainer.py:2135] 2024-06-10 12:00:00,001 >>   Num examples = 16,000
[INFO|trainer.py:2138] 2024-06-10 12:00:00,002 >>   Total optimization steps = 500
{'loss': 2.1488, 'grad_norm': 1.5078125, 'learning_rate': 0.00011470588235294115, 'epoch': 0.62}
{'loss': 2.5139, 'grad_norm': 1.0546875, 'learning_rate': 0.00011176470588235293, 'epoch': 0.63}
[INFO|trainer.py:3705] 2024-06-10 12:25:03,118 >> Saving model checkpoint to out/checkpoint-500
{'train_runtime': 1523.4411, 'train_samples_per_second': 10.503, 'train_steps_per_second': 0.328, 'train_loss': 2.0312, 'epoch': 1.0}
"""


def test_hf_trainer_loss_dicts_have_no_time(tmp_path):
    """The loss dicts carry neither a time nor a step: numbered in order and said to be approximate; the
    median step is unknown (no timed step line), never guessed from train_runtime."""
    doc = run(tmp_path, HF_TRAINER)
    g = doc["goodput"]
    assert g["steps"] == 2 and g["median_step_s"] is None and "median_step_s" in g["nulls"]
    assert g["checkpoint_saves"] == 1 and g["saves"][0]["step"] == 500
    assert any("approximate" in n for n in g["notes"])


KERAS = """\
Epoch 1/3
\x1b[1m100/100\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m52s\x1b[0m 120ms/step - loss: 0.9132
Epoch 1: saving model to /tmp/ckpt/model.keras
Epoch 2/3
\x1b[1m100/100\x1b[0m \x1b[32m━━━━━━━━━━━━━━━━━━━━\x1b[0m\x1b[37m\x1b[0m \x1b[1m12s\x1b[0m 120ms/step - loss: 0.5432
Epoch 3/3
100/100 [==============================] - 12s 120ms/step - loss: 0.4011
"""


def test_keras_epoch_lines_with_ansi_colour(tmp_path):
    """Keras 3 colours its bar (ANSI stripped), Keras 2 draws '='; step = epoch x 100; no timestamps, so the
    medians come from the epoch durations the lines report: 52 s (compile) then 12 s per 100 steps."""
    doc = run(tmp_path, KERAS)
    g = doc["goodput"]
    assert (g["first_step"], g["last_step"]) == (100, 300)
    assert g["median_step_s"] == 0.12 and g["step_time_source"] == "reported"
    assert g["wall_s"] is None and g["checkpoint_saves"] == 1


def test_step_pattern_reads_any_other_framework(tmp_path):
    from tpudoctor.goodput.readers import step_pattern

    text = "".join(f"2025-05-05 10:00:{s:02d},000 trainer INFO iter {n} took {2.0:.1f}s\n"
                   for n, s in ((1, 2), (2, 4), (3, 6)))
    doc = run(tmp_path, text, step_pattern=step_pattern(r"iter (?P<step>\d+) took (?P<seconds>[\d.]+)s"))
    assert doc["goodput"]["median_step_s"] == 2.0 and doc["goodput"]["steps"] == 3
    with pytest.raises(ValueError, match="not a valid regular expression"):
        step_pattern("step (")


def test_clock_jump_backwards_is_reported_and_not_a_negative_step(tmp_path):
    """An NTP step of -1 h between step 2 and step 3: that interval is not timed, the jump is reported, and the
    wall time adds it back (the two sides measured apart)."""
    text = ("I0301 12:00:00.000000 1 max_utils.py:95] System Information: Jax Version: 0.4.35\n"
            "I0301 12:00:10.000000 1 metric_logger.py:226] completed step: 1, seconds: 10.000\n"
            "I0301 12:00:20.000000 1 metric_logger.py:226] completed step: 2, seconds: 10.000\n"
            "I0301 11:00:30.000000 1 metric_logger.py:226] completed step: 3, seconds: 10.000\n"
            "I0301 11:00:40.000000 1 metric_logger.py:226] completed step: 4, seconds: 10.000\n")
    doc = run(tmp_path, text, year=2025)
    g = doc["goodput"]
    assert g["clock_jumps"][0]["jump_s"] == -3590.0 and g["clock_jumps"][0]["step"] == 3
    assert g["median_step_s"] == 10.0 and g["restarts"] == 0
    # 12:00:00 -> 12:00:20 and 11:00:30 -> 11:00:40: 30 s measured; the interval across the jump is unknown
    assert g["wall_s"] == 30.0


def test_interleaved_workers_with_kubectl_prefixes_are_separate_streams(tmp_path):
    """kubectl logs --prefix: each pod is a worker; the lead worker (most steps) makes the account; the other
    worker's lag is listed."""
    lines = []
    for n in range(1, 6):
        for pod, lag in (("train-slice-job-0-0-abcde", 0), ("train-slice-job-0-1-fghij", 1)):
            if n + lag > 5 + (1 if lag == 0 else 0):
                continue
            lines.append(f"[pod/{pod}/jax-tpu] I0301 12:00:{10 * n + lag:02d}.000000 1 metric_logger.py:226] "
                         f"completed step: {n}, seconds: 10.000")
    doc = run(tmp_path, "\n".join(lines) + "\n", year=2025)
    workers = {w["worker"]: w for w in doc["workers"]}
    assert set(workers) == {"train-slice-job-0-0-abcde", "train-slice-job-0-1-fghij"}
    assert doc["lead_worker"] == "train-slice-job-0-0-abcde"
    assert doc["goodput"]["median_step_s"] == 10.0 and doc["goodput"]["restarts"] == 0


def test_interleaved_unlabelled_workers_are_not_restarts(tmp_path):
    """Two workers print into one log without a label, one a step behind: the steps go back and forth. That is
    counted as out-of-order lines and said, not read as restarts."""
    lines = []
    for n in range(1, 8):
        lines.append(f"I0301 12:00:{10 * n:02d}.000000 1 metric_logger.py:226] completed step: {n}, seconds: 10.0")
        if n > 1:
            lines.append(f"I0301 12:00:{10 * n + 1:02d}.000000 1 metric_logger.py:226] completed step: {n - 1}, "
                         "seconds: 10.0")
    doc = run(tmp_path, "\n".join(lines) + "\n", year=2025)
    g = doc["goodput"]
    assert g["restarts"] == 0 and g["median_step_s"] == 10.0
    assert any("without a worker label" in n for n in g["notes"])


def test_clock_reads_each_prefix_shape():
    clock = Clock(2024)
    assert clock.read("I0813 17:19:52.231616 140 metric_logger.py:226] x") == 1723569592.231616
    assert clock.read("2024-02-24T13:38:44 - 3 - levanter.checkpoint - x") == 1708781924.0
    assert clock.read("2020-09-07 12:33:03.540827: I tensorflow/core/x.cc:1] y") == pytest.approx(1599481983.540827)
    assert clock.read("[INFO|trainer.py:2134] 2024-06-10 12:00:00,000 >> x") == 1718020800.0
    assert clock.read("06/12/2020 10:05:38 - INFO - transformers.trainer_tf -   x") == 1591956338.0
    assert clock.read("INFO:tensorflow:loss = 1, step = 2") is None
    events = list(read_events(["XPK Start: Tue Aug 13 17:15:02 UTC 2024"], "x"))
    assert events[0].kind is Kind.START and events[0].t == 1723569302.0


def test_bounded_memory_keeps_the_figures_of_a_long_run(tmp_path, monkeypatch):
    """Past MAX_INTERVALS step intervals a run keeps only its latest ones one by one (the steps a restart redoes
    are the latest) and folds the middle: the figures stay those of the unbounded read."""
    from tpudoctor.goodput import run as goodput_run

    lines = ["XPK Start: Fri Mar 07 12:00:00 UTC 2025"]
    for n in range(0, 300):
        t = 60 + n * 2
        lines.append(f"I0307 {12 + t // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d}.000000 1 metric_logger.py:226] "
                     f"completed step: {n}, seconds: 2.000")
    lines += ["jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: Socket closed", "XPK End: Fri Mar 07 12:11:00 UTC 2025",
              "EXIT_CODE=1", "XPK Start: Fri Mar 07 12:12:00 UTC 2025",
              "I0307 12:12:30.000000 1 checkpointing.py:480] restoring from this run's directory step 289",
              "I0307 12:13:00.000000 1 metric_logger.py:226] completed step: 290, seconds: 30.000",
              "I0307 12:13:02.000000 1 metric_logger.py:226] completed step: 291, seconds: 2.000"]
    text = "\n".join(lines) + "\n"
    full = run(tmp_path, text, name="full.log")["goodput"]
    monkeypatch.setattr(goodput_run, "MAX_INTERVALS", 50)
    monkeypatch.setattr(goodput_run, "TAIL_INTERVALS", 20)
    bounded = run(tmp_path, text, name="bounded.log")["goodput"]
    # steps 290-299 (10 intervals of 2 s) were redone; 60 s after step 299 (12:10:58) to the end line lost too
    assert full["badput"]["WASTED_PROGRESS_FROM_DISRUPTION"]["seconds"] == 20.0 + 2.0
    for key in ("wall_s", "productive_s", "ettr", "repeated_steps", "median_step_s"):
        assert bounded[key] == full[key], key
    assert bounded["badput"] == full["badput"]


def test_a_blocks_last_lines_are_rsplits_without_the_copy():
    """The known forms keep each block's last stamped lines; they are found from the block's end (rfind), not by
    stripping a copy of the whole block: the same lines as ``rstrip().rsplit()`` gives, at every edge."""
    from tpudoctor.goodput.lines import _last_lines

    blocks = [b"", b"\n", b"a", b"a\n", b"a\nb\n\n\n", b"\n\na\n", b"x\n" * 64, b"x\n" * 65,
              b"\n".join(b"line %d" % i for i in range(200)) + b"\n"]
    for block in blocks:
        for count in (1, 3, 64):
            assert _last_lines(block, count) == block.rstrip(b"\n").rsplit(b"\n", count)[-count:], (block, count)
