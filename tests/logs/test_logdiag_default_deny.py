"""Default deny, stronger (issue 42): a log is PASS only when nothing in it reads as a failure; a traceback cut
before its exception line is a failure that says so; a short excerpt with no sign of a healthy run is
``outcome-unknown``, a WARN that says what it cannot tell. Inputs are real logs (held-out set 5, read and marked
tuned) and lines from public threads."""

from __future__ import annotations

from pathlib import Path

from paths import TESTS

from tpudoctor.findings import Status
from tpudoctor.logdiag import diagnose_file, diagnose_text

SET5 = TESTS / "data" / "logs" / "heldout5"


def _only(path_or_text) -> object:
    found = diagnose_file(path_or_text) if isinstance(path_or_text, Path) else diagnose_text(path_or_text)
    assert found, "called PASS"
    return found[0]


def test_a_serving_stacks_traceback_printed_one_record_per_line_and_cut_is_a_failure_that_says_so():
    """vllm-project/tpu-inference#765: the API server's frames, each under ``(APIServer pid=N)``, and no exception
    line: was PASS ("no error-level event")."""
    for name in ("h5_24_tpu_inference_apiserver_startup_traceback_cut.log",
                 "h5_25_vllm_tpu_qwen3_moe_apiserver_traceback_cut.log",
                 "h5_10_vllm_tpu_unexpected_worker_hostname_cut.log"):
        top = _only(SET5 / name)
        assert top.id == "unrecognised-failure" and top.status is Status.WARN, name
        assert "cut before its exception line" in top.message and "missing" in top.message, top.message


def test_a_traceback_with_its_header_cut_before_the_exception_says_the_exception_is_missing():
    """pytorch/xla#6711: header and frames, the paste ends in a frame."""
    top = _only(SET5 / "h5_23_torchxla_gemma_static_cache_traceback_cut.log")
    assert top.id == "unrecognised-failure"
    assert top.evidence["error_kind"].startswith("a traceback cut before its exception line")


def test_a_complete_traceback_is_not_called_cut():
    text = ('Traceback (most recent call last):\n  File "/app/train.py", line 12, in <module>\n    main()\n'
            "ValueError: Mosaic-free failure\n")
    assert _only(text).evidence["error_kind"] == "a traceback"


def test_frames_followed_by_their_exception_line_are_not_a_cut_traceback():
    lines = [f"(APIServer pid=7) {line}" for line in (
        '  File "/vllm/engine.py", line 3, in run', "    step()", '  File "/vllm/core.py", line 9, in step',
        "    raise ValueError('bad')", "ValueError: bad")]
    found = diagnose_text("\n".join(lines) + "\n")
    assert all("cut before" not in f.message for f in found)


def test_a_line_whose_words_say_it_failed_is_no_pass_without_an_error_form():
    """tpunetd's failure line from AI-Hypercomputer/maxtext#2041 without its glog level: words only."""
    line = "Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session e6c885828b538167; Start failure handling\n"
    top = _only("".join(f"loading shard {i} of 30\n" for i in range(30)) + line)
    assert top.id == "unrecognised-failure" and top.status is Status.WARN
    assert "reads as a failure" in top.evidence["error_kind"]


def test_failure_words_the_program_logged_below_error_or_negated_are_not_a_failure():
    """A warning or info line is the program saying it is no error; "0 errors", "unless there is an error",
    "retrying" are not failures (the >20-line log keeps the short-excerpt rule out of it)."""
    filler = "".join(f"completed step: {i}, seconds: 1.341, loss: 0.5\n" for i in range(21))
    for line in ("2020-06-17 16:46:34.480694: W tensorflow/core/kernels/data/generator_dataset_op.cc:103] Error "
                 "occurred when finalizing GeneratorDataset iterator: Cancelled: Operation was cancelled",
                 "Finished with 0 errors", "hiding output unless there is an error.",
                 "Failed to recognize coordinator address jax-job-0-0.jax-svc on attempt 3, retrying..."):
        assert diagnose_text(filler + line + "\n") == [], line


def test_a_short_excerpt_with_no_failure_and_no_sign_of_health_cannot_tell():
    """A bare message with no error word (jax-ml/jax#39662's SparseCore halt reason is now named; a plain
    printout is not): outcome-unknown, a WARN that says what it cannot tell and what would tell."""
    top = _only("Compiling train_step\nModel parameters: 6738415616\n")
    assert top.id == "outcome-unknown" and top.status is Status.WARN
    assert "cannot tell" in top.message and "2 line(s)" in top.message
    assert "last few hundred lines" in top.remediation.text


def test_a_short_excerpt_that_shows_the_run_working_is_a_pass():
    """AI-Hypercomputer/maxtext#761's step line; vllm-project/vllm#19680's throughput line."""
    assert diagnose_text("completed step: 9, seconds: 1.341, TFLOP/s/device: 257.929, Tokens/s/device: 36653.244, "
                         "loss: 0.000\n") == []
    assert diagnose_text("INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, "
                         "Avg generation throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 reqs, GPU KV cache "
                         "usage: 57.9%, Prefix cache hit rate: 40.5%\n") == []


def test_a_long_log_with_no_failure_is_a_pass_even_without_a_step_line():
    assert diagnose_text("".join(f"loading shard {i} of 30\n" for i in range(30))) == []
