"""What tpudoctor hang reads: Megascale digests, step lines, log time stamps, py-spy's errors, source lines.

Lines are written as the software prints them (shapes from the Megascale hang playbook and XLA's Megascale
debugging workflow; step lines from MaxText, TPUEstimator, TF2, torch_xla, tqdm and HF Trainer; py-spy 0.4's
own error messages), with glog/absl prefixes and the noise around them.
"""

from __future__ import annotations

import datetime as _dt
import textwrap

import pytest

from tpudoctor.hang.digest import find_digests, worker_of_host
from tpudoctor.hang.progress import line_time, parse_step_line, reading_from_lines
from tpudoctor.hang.stacks import failure_from, source_context

NOW = _dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=_dt.timezone.utc)

BAD_CHIP = textwrap.dedent("""\
    I1201 10:59:58.120000  3102 train.py:310] completed step: 4120, seconds: 2.210, TFLOP/s/device: 310.5, loss: 2.41
    E1201 11:04:58.413000  3388 megascale_error_aggregator.cc:412] Megascale detects a hang that is likely caused by bad TPU chips on the following hosts. Please remove the hosts from the fleet and restart the workload. If problem persists please contact Megascale XLA team.

    The host that have bad TPUs are: t1v-n-5c0f3a2e-w-5

    Full error digest:
      Potential cause: BAD_TPU_CHIP
      Potential culprit workers: t1v-n-5c0f3a2e-w-5
      TPU stats:
        t1v-n-5c0f3a2e-w-5: 0x1c40
      TPU program fingerprints:
        t1v-n-5c0f3a2e-w-5: 7be1e3a9d5c02f11
    I1201 11:05:02.000000  3102 checkpoint_manager.py:1140] Waiting for previous save to complete
    """)
INCONSISTENT = textwrap.dedent("""\
    E1201 11:10:00.000000  3388 megascale_error_aggregator.cc:420] Megascale detects a hang that is likely caused by inconsistent TPU programs. This can be caused by some workers running with different JIT functions or a bug in the XLA compiler. Please inspect the HLO dumps to confirm the root cause.
    Example hosts that have different HLO fingerprints: t1v-n-5c0f3a2e-w-3
    Full error digest:
      Potential cause: INCONSISTENT_TPU_PROGRAM
      Potential culprit workers: t1v-n-5c0f3a2e-w-3
      TPU stats:
        t1v-n-5c0f3a2e-w-3: 0x0
      TPU program fingerprints:
        t1v-n-5c0f3a2e-w-3: 1f00aa
        t1v-n-5c0f3a2e-w-0: 9c3d01
    W1201 11:10:01.000000  3102 train.py:12] something unrelated: 1
    """)
DIFFERENT_MODULE = textwrap.dedent("""\
    Megascale detects a hang that is likely caused by running different modules on different devices. Please confirm that all workers is running the exact same program. It can also be caused by a hang in a subset of devices and the unaffected devices have moved on to the next program. Please inspect the digest below to further root cause the hang.
    Example hosts that have different HLO modules: slice-0-host-2
    Full error digest:
      Potential cause: Different module
      Potential culprit workers: jax_worker/2:slice-0-host-2
      TPU stats:
        slice-0-host-2: 0x214
      TPU states:
        Module: jit_loss_and_grad
        Fingerprint: 4d2c
        Launch ID: 193
          tc0:0x214(fusion.12): slice-0-host-2
        Module: jit_optimizer_apply
        Fingerprint: 88a1
        Launch ID: 0
          tc0:0x0(copy.4): slice-0-host-0, slice-0-host-1
    completed step: 77
    """)
TIMED_OUT = ("E1201 11:04:50.000000  2211 real_program_continuator.cc:1066] Megascale hang detected: Timed out "
             "waiting for 4 graphs to complete at launch_id 13650. Already completed: 100. StepGloballyInProgress: "
             "true. Timeout: 5m")
UNRECOVERABLE = textwrap.dedent("""\
    E1201 11:20:00.000000  3388 megascale_error_aggregator.cc:500] Some workers have halted with an unrecoverable error:
      jax_worker/6 : INTERNAL: Failed to copy data from TPU to host
      Please inspect the error log of these workers:
      jax_worker/6
    """)


def test_a_bad_chip_digest_with_its_program_counter():
    digests = find_digests(BAD_CHIP.splitlines(), "worker-0.log", now=NOW)
    assert len(digests) == 1
    d = digests[0]
    assert d.kind == "digest" and d.cause == "bad_tpu_chip"
    assert d.culprit_hosts == ["t1v-n-5c0f3a2e-w-5"]
    assert d.program_counters == {"t1v-n-5c0f3a2e-w-5": "0x1c40"} and d.nonzero_pc_hosts == ["t1v-n-5c0f3a2e-w-5"]
    assert d.fingerprints == {"t1v-n-5c0f3a2e-w-5": "7be1e3a9d5c02f11"}
    assert d.line_no == 2 and d.logged_at is not None
    assert "Waiting for previous save" not in d.text  # the next prefixed record ends the digest
    assert worker_of_host(d.culprit_hosts[0]) == "5"


def test_an_inconsistent_program_digest_with_two_fingerprints():
    (d,) = find_digests(INCONSISTENT.splitlines(), "x", now=NOW)
    assert d.cause == "inconsistent_program" and d.culprit_hosts == ["t1v-n-5c0f3a2e-w-3"]
    assert d.fingerprints == {"t1v-n-5c0f3a2e-w-3": "1f00aa", "t1v-n-5c0f3a2e-w-0": "9c3d01"}
    assert d.zero_pc_hosts == ["t1v-n-5c0f3a2e-w-3"]


def test_a_different_module_digest_with_tpu_states_and_an_unprefixed_log():
    (d,) = find_digests(DIFFERENT_MODULE.splitlines(), "x", now=NOW)
    assert d.cause == "different_module" and d.culprit_hosts == ["slice-0-host-2"]
    assert [m["module"] for m in d.modules] == ["jit_loss_and_grad", "jit_optimizer_apply"]
    assert d.modules[0]["launch_id"] == 193 and d.modules[1]["entries"][1]["host"] == "slice-0-host-1"
    assert d.nonzero_pc_hosts == ["slice-0-host-2"]
    assert "completed step" not in d.text  # an unindented line that is no digest field ends it


def test_hang_detected_lines_and_unrecoverable_errors():
    found = find_digests([TIMED_OUT, *UNRECOVERABLE.splitlines()], "x", now=NOW)
    assert [d.kind for d in found] == ["timed_out", "unrecoverable"]
    assert found[0].launch_id == 13650 and found[0].timeout == "5m"
    assert found[1].cause == "unrecoverable_error" and found[1].culprit_workers == ["jax_worker/6"]


def test_a_digest_that_cannot_tell():
    line = ("E1201 11:30:00.000000 1 megascale_error_aggregator.cc:1] Megascale detects a hang but cannot "
            "determine the root cause. Please inspect the full digest below.")
    (d,) = find_digests([line], "x", now=NOW)
    assert d.cause == "unknown" and d.culprit_hosts == []


@pytest.mark.parametrize(("line", "step", "fmt"), [
    ("I0813 17:19:52.231616 140 metric_logger.py:226] completed step: 8, seconds: 14.265, TFLOP/s/device: 3.1, "
     "Tokens/s/device: 571.2, total_weights: 8192, loss: 10.4", 8, "maxtext"),
    ("completed step: 12, seconds: 1.002, TFLOP/s/device: 3.1, loss: 9.8", 12, "maxtext"),
    ("INFO:tensorflow:loss = 0.208, step = 1023436 (3473.152 sec)", 1023436, "tpuestimator"),
    ("Train Step: 59/90  / loss = 2.1 / time = 0.143 sec", 59, "tf2-official"),
    ("| Training Device=xla:0/3 Epoch=1 Step=320 Loss=0.10231 Rate=1610.21 GlobalRate=1401.12 Time=07:29:42", 320,
     "torch_xla"),
    ("train:  12%|█▏        | 1200/10000 [01:02<07:36, 19.27it/s, loss=3.21]", 1200, "tqdm"),
    ("{'loss': 2.1, 'grad_norm': 1.3, 'learning_rate': 4.9e-05, 'epoch': 0.62}", 0.62, "hf-trainer"),
    ("2026-11-30 10:00:00,123 INFO step 41: loss 0.5", 41, "step"),
])
def test_progress_lines_in_their_real_shapes(line, step, fmt):
    parsed = parse_step_line(line)
    assert parsed is not None and parsed.step == step and parsed.format == fmt


@pytest.mark.parametrize("line", [
    "2024-02-24T13:38:44 - 3 - levanter.checkpoint - checkpoint.py:246 - INFO :: Saving checkpoint to "
    "gs://b/step-9485 for step 9485",
    "restoring from this run's directory step 300",
    "INFO:tensorflow:Saving checkpoints for 4000 into gs://b/model.ckpt.",
])
def test_checkpoint_lines_are_not_progress(line):
    assert parse_step_line(line) is None


def test_glog_time_without_a_year_and_iso_with_a_zone():
    stamp = line_time("I1130 23:59:58.500000 1 x.py:1] completed step: 3", NOW)
    assert stamp is not None and stamp.astimezone().month == 11 and stamp.year == 2026
    new_year = _dt.datetime(2027, 1, 1, 0, 0, 5, tzinfo=_dt.timezone.utc)
    december = line_time("I1231 23:59:58.500000 1 x.py:1] x", new_year)
    assert december is not None and december.astimezone().year in (2026, 2027) and december <= new_year
    assert line_time("2026-11-30T10:00:00Z step 3", NOW) == _dt.datetime(2026, 11, 30, 10, 0, tzinfo=_dt.timezone.utc)
    assert line_time("no time here", NOW) is None


def test_a_reading_takes_the_last_step_and_the_median_step_time():
    lines = [f"I1201 11:00:{s:02d}.000000 1 train.py:48] completed step: {s}, seconds: {0.5 if s % 2 else 0.7}, "
             "loss: 1.0" for s in range(10)] + ["I1201 11:00:30.000000 1 train.py:60] Saving checkpoint"]
    reading = reading_from_lines("train.log", lines, now=NOW)
    assert reading.step == 9 and reading.format == "maxtext"
    assert reading.seconds_per_step == pytest.approx(0.6)
    assert reading.logged_at == line_time(lines[9], NOW)


@pytest.mark.parametrize(("message", "kind"), [
    ("Permission Denied: Try running again with elevated permissions by going 'sudo env \"PATH=$PATH\" !!'",
     "ptrace_denied"),
    ("Error: Failed to get process executable name. Check that the process is running.\n\nCaused by:\n"
     "    0: Permission denied (os error 13)\n    1: Permission denied (os error 13)", "ptrace_denied"),
    ("Permission Denied\n\nIt looks like you are running in a docker container. Please make sure you started your "
     "container with the SYS_PTRACE capability.", "ptrace_denied"),
    ("Error: Operation not permitted (os error 1)", "ptrace_denied"),
    ("Error: Failed to find python version from target process", "not_python"),
    ("Error: something else entirely", "error"),
])
def test_pyspy_errors_map_to_what_to_do(message, kind):
    import os

    assert failure_from(os.getpid(), message).kind == kind


def test_a_pid_that_is_gone_is_an_exited_process_whatever_py_spy_says():
    message = ("Error: Failed to get process executable name. Check that the process is running.\n\nCaused by:\n"
               "    0: No such file or directory (os error 2)")
    assert failure_from(2 ** 22 + 7, message).kind == "exited"


def test_source_lines_and_the_locks_around_them(tmp_path):
    source = tmp_path / "writer.py"
    source.write_text(textwrap.dedent("""\
        class Writer:
            def flush(self):
                with self._lock:  # held while writing
                    if self._pending:
                        with open(self.path, "a") as handle:
                            handle.write("x")
        """))
    code, holding = source_context(str(source), 5)
    assert code == 'with open(self.path, "a") as handle:'
    assert holding == ("with self._lock:  # held while writing (writer.py:3)",)
    assert source_context(str(source), 99) == (None, ())
    assert source_context("<string>", 1) == (None, ())
