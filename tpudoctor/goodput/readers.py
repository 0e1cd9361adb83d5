"""Framework line readers: the step, checkpoint, start-up and failure lines TPU jobs print, as typed events.

One small declarative class per framework: ``keywords`` (a line is tried only when it holds one of
them) and ``patterns`` (a regex per event). Step lines are not written here: each reader takes its
framework's forms from the one step-line grammar (``tpudoctor/logs/step_forms.toml``, shared with ``hang``).

Named groups a pattern may set: ``step`` (int), ``seconds`` (a duration the line reports), ``dur``
(``4m40.88s``), ``mode`` (``sync``/``async``), ``path`` (a checkpoint path whose last number is the
step), ``code`` (an exit code), ``approx_step`` (Levanter's ``4.50k``).
"""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

from tpudoctor.goodput.line_patterns import (
    Kind,
    P,
    Pattern,
    step_examples,
    step_keywords,
    step_patterns,
)


@dataclasses.dataclass(slots=True)
class Event:
    kind: Kind
    t: float | None
    """Seconds since the epoch when the line was printed (None: the line has no time)."""
    step: int | None = None
    seconds: float | None = None
    """A duration the line itself reports (a step's ``seconds:``, a save's ``in 2.09 seconds``)."""
    mode: str | None = None
    worker: str | None = None
    framework: str = ""
    source: str = ""
    line_no: int = 0
    text: str = ""
    approx: bool = False
    code: int | None = None

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line_no}" if self.line_no else self.source


class LineReader:
    """One framework's lines. Subclasses set ``framework``, ``keywords`` and ``patterns``."""

    framework: ClassVar[str] = ""
    keywords: ClassVar[tuple[str, ...]] = ()
    patterns: ClassVar[tuple[Pattern, ...]] = ()
    example_lines: ClassVar[tuple[str, ...]] = ()
    """Lines as the framework prints them, one per pattern at least (the tests read every one)."""

    def first_hit(self, line: str) -> tuple[Pattern, re.Match] | None:
        for pattern in self.patterns:
            m = pattern.regex.search(line)
            if m and not (pattern.unless is not None and pattern.unless.search(line)):
                return pattern, m
        return None


class MaxText(LineReader):
    framework = "maxtext"
    keywords = (*step_keywords('maxtext'), "completed step:", "System Information:", "checkpoint", "restoring from this run", "Elastic attempt",
                "Memstats: After params")
    patterns = (
        *step_patterns('maxtext'),
        P(Kind.START, r"System Information: Jax Version:"),
        P(Kind.INIT_END, r"System Information: Jax Backend:"),
        P(Kind.PREP_END, r"Memstats: After params initialized"),
        P(Kind.RESTORE_START, r"restoring from this run's directory step (?P<step>\d+)"),
        P(Kind.PREP_END, r"No existing checkpoints found, not restoring checkpoint"),
        P(Kind.SAVE_END, r"saved a checkpoint at step (?P<step>\d+)", mode="sync"),
        P(Kind.SAVE_START, r"Started an asynchronous checkpoint save for step (?P<step>\d+)", mode="async"),
        P(Kind.START, r"Elastic attempt \d+ out of \d+"),
    )
    example_lines = (
        *step_examples('maxtext'),
        "System Information: Jax Version: 0.7.2.dev20250826",
        "System Information: Jax Backend: PJRT C API",
        "Memstats: After params initialized:",
        "restoring from this run's directory step 200",
        "No existing checkpoints found, not restoring checkpoint.",
        "saved a checkpoint at step 200",
        "Started an asynchronous checkpoint save for step 400",
        "Elastic attempt 2 out of 10",
    )


class Orbax(LineReader):
    framework = "orbax"
    keywords = ("save", "load", "Saving", "Restoring", "Finished")
    patterns = (
        P(Kind.SAVE_START, r"\[(?P<mode>sync|async)\] Started save checkpoint @ (?P<path>\S+?)\.?$"),
        P(Kind.SAVE_BLOCKING_END, r"\[(?P<mode>sync|async)\] Finished blocking save in (?P<seconds>[\d.]+) seconds"),
        P(Kind.SAVE_BLOCKING_END, r"Finished blocking save in (?P<seconds>[\d.]+) seconds\. Continuing to save "
                                  r"asynchronously to (?P<path>\S+?)\.?$", mode="async"),
        P(Kind.SAVE_END, r"\[(?P<mode>sync|async)\] Finished save(?: \(blocking \+ background\))? in "
                         r"(?P<seconds>[\d.]+) seconds @ (?P<path>\S+)"),
        P(Kind.SAVE_START, r"\[process=\d+\] Saving checkpoint at step (?P<step>\d+)"),
        P(Kind.SAVE_START, r"Saving item to (?P<path>\S+?)\.?$"),
        P(Kind.SAVE_END, r"Finished saving checkpoint to (?P<path>\S+?)\.?$"),
        P(Kind.SAVE_END, r"Finished synchronous save\.", mode="sync"),
        P(Kind.RESTORE_START, r"\[(?:sync|async)\] Started load checkpoint @ (?P<path>\S+?)\.?$"),
        P(Kind.RESTORE_END, r"\[(?:sync|async)\] Finished load in (?P<seconds>[\d.]+) seconds @ (?P<path>\S+)"),
        P(Kind.RESTORE_START, r"Restoring item from (?P<path>\S+?)\.?$"),
        P(Kind.RESTORE_END, r"Finished restoring checkpoint from (?P<path>\S+?)\.?$"),
    )
    example_lines = (
        "I0608 20:54:47.918797 123567287061632 event_tracking.py:70] [process=0] [async] Started save checkpoint "
        "@ /dev/shm/goodput/SYNTHETIC_TEST/checkpoints/19.",
        "I0426 14:53:16.111465 140438783083712 event_tracking.py:125] [process=0] [sync] Finished blocking save in "
        "1.55 seconds. Continuing save @ /home/u/rlpd_checkpoints_single/checkpoint_2000.",
        "Finished blocking save in 0.85 seconds. Continuing to save asynchronously to gs://b/run/checkpoints/300.",
        "event_tracking.py:138] [process=0] [sync] Finished save in 11.09 seconds @ /LOGS/CKPT/checkpoints/0",
        "I0608 20:54:47.918725 123567287061632 checkpoint_manager.py:1512] [process=0] Saving checkpoint at step 19",
        "Saving item to gs://bucket/run/checkpoints/200.",
        "Finished saving checkpoint to `gs://bucket/run/checkpoints/200`.",
        "Finished synchronous save.",
        "[process=0] [sync] Started load checkpoint @ gs://bucket/run/checkpoints/200.",
        "[process=0] [sync] Finished load in 31.40 seconds @ gs://bucket/run/checkpoints/200",
        "Restoring item from gs://bucket/run/checkpoints/200.",
        "Finished restoring checkpoint from gs://bucket/run/checkpoints/200.",
    )


class TPUEstimator(LineReader):
    """TF1 Estimator/TPUEstimator hooks; each line may come twice (``INFO:tensorflow:`` and absl)."""

    framework = "tpuestimator"
    keywords = (*step_keywords('tpuestimator'), "step = ", "Saving checkpoints for", "Restoring parameters from", "Init TPU system",
                "Initialized TPU in", "Done running local_init_op", "An error was raised", "lame workers", "shuffle buffer",
                "Shuffle buffer")
    patterns = (
        *step_patterns('tpuestimator'),
        P(Kind.SAVE_START, r"Saving checkpoints for (?P<step>\d+) into (?P<path>\S+?)\.?$", mode="sync"),
        P(Kind.RESTORE_START, r"Restoring parameters from (?P<path>\S+)"),
        P(Kind.START, r"Init TPU system"),
        P(Kind.INIT_END, r"Initialized TPU in (?P<seconds>[\d.]+) seconds"),
        P(Kind.PREP_END, r"Done running local_init_op"),
        P(Kind.FAILURE, r"An error was raised\. This may be due to a preemption.*(?:a new session will be created)?",
          mode="new-session"),
        P(Kind.FAILURE, r"ShutdownHook: lame workers found"),  # a worker lost its TPU (preempted, unhealthy)
        P(Kind.DATA_START, r"Filling up shuffle buffer \(this may take a while\)"),
        P(Kind.DATA_END, r"Shuffle buffer filled\."),
    )
    example_lines = (
        *step_examples('tpuestimator'),
        "I0326 17:01:28.233227 140456655849280 basic_session_run_hooks.py:606] Saving checkpoints for 1000 into "
        "gs://bucket/model/model.ckpt.",
        "INFO:tensorflow:Restoring parameters from gs://bucket/model/model.ckpt-72000",
        "INFO:tensorflow:Init TPU system",
        "INFO:tensorflow:Initialized TPU in 7 seconds",
        "INFO:tensorflow:Done running local_init_op.",
        "INFO:tensorflow:An error was raised. This may be due to a preemption in a connected worker or parameter "
        "server. The current session will be closed and a new session will be created. This error may also occur "
        "due to a gRPC failure caused by high memory or network bandwidth usage in the parameter servers.",
        "INFO:tensorflow:ShutdownHook: lame workers found: HeartbeatManager(/job:worker/replica:0/task:0/device:CPU:0)",
        "2020-09-07 12:33:40.101: I tensorflow/core/kernels/data/shuffle_dataset_op.cc:177] Filling up shuffle "
        "buffer (this may take a while): 9351 of 10000",
        "2020-09-07 12:33:41.901: I tensorflow/core/kernels/data/shuffle_dataset_op.cc:230] Shuffle buffer filled.",
    )


class TF2Official(LineReader):
    """TensorFlow Model Garden: the custom training loops, Orbit's controller, the object detection loop."""

    framework = "tf2-official"
    keywords = (*step_keywords('tf2-official'), "Train Step:", "train | step:", "per-step time", "checkpoint", "restor")
    patterns = (
        *step_patterns('tf2-official'),
        P(Kind.SAVE_END, r"saved checkpoint to (?P<path>\S+?)\.?$", mode="sync"),
        P(Kind.SAVE_END, r"Saved checkpoint to (?P<path>\S+)\s*$", mode="sync"),
        P(Kind.SAVE_START, r"Saving model as TF checkpoint: (?P<path>\S+)", mode="sync"),
        P(Kind.RESTORE_START, r"restoring or initializing model\.\.\.|restoring model from (?P<path>\S+?)\.\.\."),
        P(Kind.RESTORE_END, r"restored model from (?P<path>\S+?)\.?$"),
        P(Kind.PREP_END, r"train \| step: +\d+ \| training until step"),
    )
    example_lines = (
        *step_examples('tf2-official'),
        "I0101 00:10:01.000000 1 controller.py:495] saved checkpoint to gs://b/model/ckpt-2000.",
        "Saved checkpoint to gs://b/model/ckpt-59",
        "Saving model as TF checkpoint: gs://b/model/ctl_step_100.ckpt-1",
        "I0101 00:00:30.000000 1 controller.py:430] restoring or initializing model...",
        "I0101 00:01:30.000000 1 controller.py:440] restored model from gs://b/model/ckpt-1000.",
        "I0101 00:01:31.000000 1 controller.py:292] train | step:   1000 | training until step 5000...",
    )


class TorchXLA(LineReader):
    """torch_xla's ``print_training_update``: one line per device, ``Time=`` a time of day (or ``asctime``)."""

    framework = "torch_xla"
    keywords = (*step_keywords('torch_xla'), " train begin ", " train end ", " test end ")
    patterns = (
        *step_patterns('torch_xla'),
        # the example scripts' epoch marks carry the same time of day: the window's clocked ends
        P(Kind.START, r"^Epoch 1 train begin (?P<tod>\d\d:\d\d:\d\d)\b"),
        P(Kind.NOTE, r"^Epoch \d+ (?:train begin|train end|test end) (?P<tod>\d\d:\d\d:\d\d)\b"),
    )
    example_lines = (
        *step_examples('torch_xla'),
        "Epoch 1 train begin 06:12:38",
        "Epoch 1 train end 22:03:35",
        "Epoch 1 test end 20:31:47, Accuracy=100.00",
    )


class Levanter(LineReader):
    framework = "levanter"
    keywords = (*step_keywords('levanter'), "checkpoint", "Progress on:")
    patterns = (
        *step_patterns('levanter'),
        P(Kind.SAVE_START, r"Saving checkpoint to (?P<path>\S+) for step (?P<step>\d+)", mode="async"),
        P(Kind.SAVE_START, r"Saving (?:temporary )?checkpoint at step (?P<step>\d+) to (?P<path>\S+)", mode="async"),
        P(Kind.SAVE_END, r"Saved checkpoint to (?P<path>\S+) for step (?P<step>\d+)", mode="async"),
        P(Kind.RESTORE_START, r"Loading checkpoint from (?P<path>\S+)"),
        P(Kind.PREP_END, r"Checkpoint not found at \S+\. Initializing from scratch"),
    )
    example_lines = (
        *step_examples('levanter'),
        "2024-02-24T13:38:44 - 3 - levanter.checkpoint - checkpoint.py:246 - INFO :: Saving checkpoint to "
        "gs://levanter-checkpoints/llama2/run/step-9485 for step 9485",
        "2024-02-24T13:38:44 - 0 - levanter.checkpoint - checkpoint.py:221 - INFO :: Saving checkpoint at step 9485 "
        "to gs://levanter-checkpoints/llama2/run/step-9485",
        "2024-02-24T13:40:02 - 0 - levanter.checkpoint - checkpoint.py:277 - INFO :: Saved checkpoint to "
        "gs://levanter-checkpoints/llama2/run/step-9485 for step 9485",
        "2024-02-24T12:00:31 - 0 - levanter.checkpoint - checkpoint.py:330 - INFO :: Loading checkpoint from "
        "gs://levanter-checkpoints/llama2/run/step-9000",
        "2024-02-24T12:00:31 - 0 - levanter.checkpoint - checkpoint.py:401 - INFO :: Checkpoint not found at "
        "gs://levanter-checkpoints/llama2/run. Initializing from scratch.",
    )


class HFTrainer(LineReader):
    """Hugging Face Trainer: its loss dicts carry no time and no step; ``train_runtime`` closes a run."""

    framework = "hf-trainer"
    keywords = (*step_keywords('hf-trainer'), "{'loss':", "'train_runtime':", "Saving model checkpoint to", "***** Running training *****",
                "Continuing training from checkpoint")
    patterns = (
        *step_patterns('hf-trainer'),
        P(Kind.EXIT, r"^\{'train_runtime': (?P<seconds>[\d.]+),"),
        P(Kind.SAVE_START, r"Saving model checkpoint to (?P<path>\S+)", mode="sync"),
        P(Kind.PREP_END, r"\*\*\*\*\* Running training \*\*\*\*\*"),
        P(Kind.RESTORE_END, r"Continuing training from checkpoint, will skip to saved global_step"),
    )
    example_lines = (
        *step_examples('hf-trainer'),
        "{'train_runtime': 1523.4411, 'train_samples_per_second': 10.503, 'train_steps_per_second': 0.328, "
        "'train_loss': 2.0312, 'epoch': 1.0}",
        "[INFO|trainer.py:3705] 2024-06-10 12:25:03,118 >> Saving model checkpoint to out/checkpoint-500",
        "[INFO|trainer.py:2134] 2024-06-10 12:00:00,000 >> ***** Running training *****",
        "[INFO|trainer.py:2154] 2024-06-10 12:00:00,004 >>   Continuing training from checkpoint, will skip to "
        "saved global_step",
    )


class Keras(LineReader):
    """Keras ``fit`` (Keras 2 and 3): one line per epoch with its steps, seconds and time per step."""

    framework = "keras"
    keywords = (*step_keywords('keras'), "/step", "saving model to", "Epoch ")
    patterns = (
        *step_patterns('keras'),
        P(Kind.SAVE_START, r"Epoch (?P<epoch>\d+): saving model to (?P<path>\S+)", mode="sync"),
        P(Kind.NOTE, r"^Epoch (?P<epoch>\d+)/\d+\s*$"),
    )
    example_lines = (
        *step_examples('keras'),
        "Epoch 3: saving model to /tmp/ckpt/model.keras",
        "Epoch 3/10",
    )


class JaxRuntime(LineReader):
    """JAX/XLA lines that say where start-up and compilation time went, and libtpu's start."""

    framework = "jax"
    keywords = ("compil", "The operation took", "distributed service", "persistent cache", "Persistent compilation")
    patterns = (
        P(Kind.COMPILE, r"Finished XLA compilation of (?P<what>\S+) in (?P<seconds>[\d.]+) sec"),
        P(Kind.COMPILE, r"slow_operation_alarm\.cc:\d+\].*The operation took (?P<dur>[\dhms.]+)"),
        P(Kind.CACHE_HIT, r"Persistent compilation cache hit for '(?P<what>[^']+)'"),
        P(Kind.CACHE_WRITE, r"Writing (?P<what>\S+) to persistent compilation cache with key"),
        P(Kind.START, r"Starting JAX distributed service on|Connecting to JAX distributed service on"),
    )
    example_lines = (
        "I0813 17:20:39.004 140 dispatch.py:264] Finished XLA compilation of jit(train_step) in 45.183 sec",
        "E0813 17:24:32.883017 1234 slow_operation_alarm.cc:140] The operation took 4m40.88s",
        "I0813 17:20:39.004 140 compilation_cache.py:187] Persistent compilation cache hit for 'jit_train_step' "
        "with key 'jit_train_step-8c3f0e'",
        "I0813 17:20:39.004 140 compiler.py:348] Writing jit_train_step to persistent compilation cache with key "
        "'jit_train_step-8c3f0e'",
        "I0813 17:15:40.100 140 distributed.py:90] Connecting to JAX distributed service on 10.0.0.2:8476",
    )


class XPK(LineReader):
    """XPK's wrapper around the container command: ``date`` at start and end, and the exit code."""

    framework = "xpk"
    keywords = ("XPK Start:", "XPK End:", "EXIT_CODE=")
    patterns = (
        P(Kind.START, r"XPK Start: (?P<date>.+)$"),
        P(Kind.EXIT, r"XPK End: (?P<date>.+)$"),
        P(Kind.EXIT, r"^EXIT_CODE=(?P<code>\d+)\s*$"),
    )
    example_lines = (
        "XPK Start: Tue Aug 13 17:15:02 UTC 2024",
        "XPK End: Tue Aug 13 19:02:11 UTC 2024",
        "EXIT_CODE=0",
    )


class Failures(LineReader):
    """Lines that end a process: fatal errors, kills and hang digests (``tpudoctor check`` names the cause)."""

    framework = "failure"
    keywords = ("Error", "Exception", "Fatal", "SIG", "Megascale detects a hang", "Killed", "preempt", "failed:")
    patterns = (
        P(Kind.FAILURE, r"Execution of replica \d+ failed: \w+"),
        P(Kind.FAILURE, r"^(?:jaxlib\.xla_extension\.|jax\.errors\.)?XlaRuntimeError: \w+"),
        P(Kind.FAILURE, r"^(?:tensorflow\.python\.framework\.errors_impl\.)?\w+Error: "),
        P(Kind.FAILURE, r"Fatal Python error:"),
        P(Kind.FAILURE, r"\*\*\* SIG(?:TERM|KILL|SEGV|ABRT|BUS) (?:received|signal)"),
        P(Kind.FAILURE, r"Megascale detects a hang"),
        P(Kind.FAILURE, r"Received SIGTERM|preemption notice|(?<![\w/])[Pp]reempted(?![\w.])"),
        P(Kind.FAILURE, r"^(?:[\w.]+\.)?\w+(?:Error|Exception)\s{2,}Traceback \(most recent call last\)"),
    )
    example_lines = (
        "E0813 10:06:40.000000 2501 pjrt_stream_executor_client.cc:2985] Execution of replica 0 failed: INTERNAL: "
        "Core halted unexpectedly: INTERNAL: Accelerator device halted prematurely",
        "jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: Socket closed",
        "RuntimeError: Orbax save failed: DEADLINE_EXCEEDED",
        "Fatal Python error: Aborted",
        "*** SIGTERM received at time=1723570000 on cpu 3 ***",
        "E0813 18:02:11.000 1 megascale.cc:120] Megascale detects a hang",
        "I0813 18:02:11.000 1 preemption_sync_manager.cc:90] Received SIGTERM: preemption notice",
        "ResourceExhaustedError                    Traceback (most recent call last)",
    )


READERS: tuple[LineReader, ...] = (MaxText(), Orbax(), TPUEstimator(), TF2Official(), TorchXLA(), Levanter(),
                                   HFTrainer(), Keras(), JaxRuntime(), XPK(), Failures())


class StepPattern(LineReader):
    """``--step-pattern REGEX``: a step line of any other framework; a ``step`` group is the step number,
    a ``seconds`` group the duration the line reports. Compiled with RE2 (linear time in the line, so a user's
    pattern cannot hang on a long line)."""

    framework = "step-pattern"

    def __init__(self, compiled):
        self.patterns = (Pattern(Kind.STEP, compiled),)
        self.keywords = ()


def step_pattern(regex: str) -> StepPattern:
    """The reader for ``--step-pattern``; ``ValueError`` with the reason when the regex is not usable."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the reason goes into the error below, not to stderr
    try:
        compiled = re2.compile(regex, options)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        try:
            re.compile(regex)
        except re.error as exc2:
            raise ValueError(f"--step-pattern is not a valid regular expression: {exc2}") from None
        raise ValueError(f"--step-pattern uses what a linear-time matcher (RE2) cannot run ({reason}): "
                         "backreferences and lookarounds are not supported; write it without them") from None
    if "step" not in compiled.groupindex:
        raise ValueError("--step-pattern needs a (?P<step>\\d+) group: the step number each line ends")
    if compiled.search("") is not None:
        raise ValueError("--step-pattern matches an empty line, so every line would be a step")
    return StepPattern(compiled)
