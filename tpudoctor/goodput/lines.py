"""Framework line readers: the step, checkpoint, start-up and failure lines TPU jobs print, as typed events.

One small declarative class per framework: ``keywords`` (a line is tried only when it holds one of
them) and ``patterns`` (a regex per event). Lines are matched as the frameworks print them, with
any glog/absl, ISO or Python-logging prefix in front (the time comes from the prefix; see
``stamps``). ``read_events`` streams a source's lines through every reader in bounded memory.

Step lines are not written here: each reader takes its framework's forms from the one step-line grammar
(``tpudoctor/logs/step_forms.toml``, shared with ``hang``); times come from ``tpudoctor.logs.clock`` and
prefixes are taken off by ``tpudoctor.logs.prefixes``, so a line gets the same time and fields in every reader.

Named groups a pattern may set: ``step`` (int), ``seconds`` (a duration the line reports), ``dur``
(``4m40.88s``), ``mode`` (``sync``/``async``), ``path`` (a checkpoint path whose last number is the
step), ``code`` (an exit code), ``approx_step`` (Levanter's ``4.50k``).
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from tpudoctor.logs import prefilter, steps
from tpudoctor.logs.clock import ASCTIME, Clock, asctime_seconds, duration_s, iso_utc, time_of_day_s
from tpudoctor.logs.prefixes import clean, kubectl_worker

MAX_TEXT_CHARS = 300
LAST_STAMP_CANDIDATES = 64
CLOCK_JUMP_S = 1.0
"""A line this much earlier than the latest before it: the clock went back."""
MAX_CLOCK_JUMPS = 20
PROBE_BYTES = 4096
PROBE_LINES = 8
"""The last lines that start like a timestamp, tried newest first for the source's end time."""
TRAILING_NUMBER = re.compile(r"(\d+)\D*$")


class Kind(str, enum.Enum):
    START = "start"
    """A process of the job starts (XPK's ``XPK Start``, JAX's first system line, an elastic attempt)."""
    INIT_END = "init_end"
    """The accelerator is initialised (ends TPU_INITIALIZATION)."""
    PREP_END = "prep_end"
    """A training-preparation milestone (model and optimizer state built, training loop entered)."""
    STEP = "step"
    SAVE_START = "save_start"
    SAVE_BLOCKING_END = "save_blocking_end"
    """The blocking part of a save is over (an async save goes on in the background)."""
    SAVE_END = "save_end"
    RESTORE_START = "restore_start"
    RESTORE_END = "restore_end"
    DATA_START = "data_start"
    DATA_END = "data_end"
    COMPILE = "compile"
    """A compilation, with its duration where the line says it."""
    CACHE_HIT = "cache_hit"
    """JAX's persistent compilation cache served a program."""
    CACHE_WRITE = "cache_write"
    """JAX wrote a program to its persistent compilation cache (the cache is on, this was a miss)."""
    FAILURE = "failure"
    EXIT = "exit"
    NOTE = "note"
    """A line a reader needs for its own state (Keras' ``Epoch N/M``); the timeline skips it."""


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


@dataclasses.dataclass(frozen=True)
class Pattern:
    kind: Kind
    regex: re.Pattern
    mode: str | None = None
    unless: re.Pattern | None = None


def P(kind: Kind, regex: str, mode: str | None = None) -> Pattern:  # noqa: N802 - reads as a table row
    return Pattern(kind, re.compile(regex), mode)


def step_patterns(framework: str) -> tuple[Pattern, ...]:
    """A framework's training-step forms from the shared grammar."""
    return tuple(Pattern(Kind.STEP, f.regex, unless=f.unless) for f in steps.forms_of(framework) if f.kind == "step")


def step_keywords(framework: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f.keyword for f in steps.forms_of(framework) if f.kind == "step"))


def step_examples(framework: str) -> tuple[str, ...]:
    return tuple(line for f in steps.forms_of(framework) if f.kind == "step" for line in f.examples)


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
    keywords = step_keywords('torch_xla')
    patterns = (
        *step_patterns('torch_xla'),
    )
    example_lines = (
        *step_examples('torch_xla'),
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
    a ``seconds`` group the duration the line reports."""

    framework = "step-pattern"

    def __init__(self, regex: str):
        compiled = re.compile(regex)
        self.patterns = (Pattern(Kind.STEP, compiled),)
        self.keywords = ()


def step_pattern(regex: str) -> StepPattern:
    """The reader for ``--step-pattern``; ``ValueError`` with the reason when the regex is not usable."""
    try:
        compiled = re.compile(regex)
    except re.error as exc:
        raise ValueError(f"--step-pattern is not a valid regular expression: {exc}") from None
    if compiled.match(""):
        raise ValueError("--step-pattern matches an empty line, so every line would be a step")
    return StepPattern(regex)


STAMP_STARTS = frozenset("IWEF[0123456789")


def _read_time(clock: Clock, line: str, given_t: float | None) -> float | None:
    t = clock.read(line) if line[:1] in STAMP_STARTS else None
    if t is None and given_t is not None:
        clock.anchor(given_t)
        return given_t
    return t


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


class _Counters:
    """Steps of frameworks whose lines carry no step number: HF Trainer's loss dicts are numbered in order
    (one logging interval each); a Keras epoch line ends step ``epoch x steps per epoch``."""

    __slots__ = ("hf_logs", "keras_epoch")

    def __init__(self) -> None:
        self.hf_logs = 0
        self.keras_epoch = 1


def read_events(lines: Iterable[str | tuple[str, float | None, str | None]], source: str, *, clock: Clock | None = None,
                readers: Iterable[LineReader] = READERS, worker: str | None = None,
                stats: dict | None = None) -> Iterator[Event]:
    """Every event in ``lines`` (text lines of one source), in order, with the time of the line.

    A line may also be ``(text, time, worker)`` for sources whose entries carry their own time and worker
    (Cloud Logging); the text's own timestamp, where it has one, still wins.

    ``stats`` (a dict) is filled with ``lines``, ``timed_events``, ``first_t`` and ``last_t`` (the source's
    first and last timestamps, any line), ``by_worker`` (the same per labelled worker) and ``year_source``.
    """
    reader = EventReader(source, clock=clock, readers=readers, worker=worker, stats=stats)
    for raw in lines:
        event = reader.line(raw)
        if event is not None:
            yield event
    reader.finish()


def read_event_blocks(blocks: Iterable[bytes], source: str, *, clock: Clock | None = None,
                      readers: Iterable[LineReader] = READERS, stats: dict | None = None) -> Iterator[Event]:
    """The same events from blocks of whole lines as raw bytes (``tpudoctor.logs.sources.byte_blocks``): once the
    source's first time is read, only the lines that hold a reader's keyword are decoded and read (one RE2 pass
    over each block), so a long log of noise costs little more than reading it."""
    reader = EventReader(source, clock=clock, readers=readers, stats=stats)
    for block in blocks:
        yield from reader.block(block)
    reader.finish()


_SLOW_PATH_MARKS = (b"\r", b"\x1b", b"[pod/")
"""Bytes that need every line read (redrawn bars, colours that may split a keyword, worker prefixes)."""


class EventReader:
    """One source's lines in order -> events; keeps the clock, the counters and the source's first and last times."""

    def __init__(self, source: str, *, clock: Clock | None = None, readers: Iterable[LineReader] = READERS,
                 worker: str | None = None, stats: dict | None = None):
        self.source = source
        self.clock = clock or Clock()
        self.readers = tuple(readers)
        self.worker = worker
        keywords = tuple({k for r in self.readers for k in r.keywords})
        every_reader_has_keywords = bool(keywords) and all(r.keywords for r in self.readers)
        self.any_keyword = re.compile("|".join(re.escape(k) for k in sorted(keywords, key=len, reverse=True))) \
            if every_reader_has_keywords else None
        self.prefilter = prefilter.Literals(keywords) if every_reader_has_keywords else None
        self.counters = _Counters()
        self.state = stats if stats is not None else {}
        self.state.setdefault("lines", 0)
        self.state.setdefault("timed_events", 0)
        self.by_worker: dict[str, list[float]] = self.state.setdefault("by_worker", {})
        self.last_by_worker: dict[str, tuple[str, float | None]] = {}
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.last_stamped: collections.deque[tuple[int, str]] = collections.deque(maxlen=LAST_STAMP_CANDIDATES)
        self.last_given: float | None = None
        self.tod_base: float | None = None
        self.tod_last: float | None = None
        self.line_no = 0
        self.latest: float | None = None
        """The latest time read so far in this clock segment (a backward jump starts a new segment)."""
        self.jumps: list[dict] = []
        self.jump_count = 0
        self.observe_every_line = False

    # ------------------------------------------------------------------ blocks
    def block(self, data: bytes) -> Iterator[Event]:
        back = self._clock_goes_back_in(data)
        if back or self.prefilter is None or self.first_t is None or any(m in data for m in _SLOW_PATH_MARKS):
            self.observe_every_line = back  # where the clock went back, exactly: every stamped line is read
            try:
                yield from self._every_line(data)
            finally:
                self.observe_every_line = False
            return
        base, at = self.line_no, 0
        for start, end in self.prefilter.line_spans(data):
            base += data.count(b"\n", at, start)
            at = start
            self.line_no = base  # line() adds the line itself
            event = self.line(data[start:end].decode("utf-8", errors="replace"), prefiltered=True)
            if event is not None:
                yield event
        self.line_no = base + data.count(b"\n", at)
        if data and not data.endswith(b"\n"):
            self.line_no += 1
        tails = data.rstrip(b"\n").rsplit(b"\n", LAST_STAMP_CANDIDATES)[-LAST_STAMP_CANDIDATES:]
        last_no = self.line_no - len(tails) + 1
        self.last_stamped.extend((last_no + i, tail.decode("utf-8", errors="replace"))
                                 for i, tail in enumerate(tails) if tail[:1] in _STAMP_START_BYTES)

    def _every_line(self, data: bytes) -> Iterator[Event]:
        text = data.decode("utf-8", errors="replace")
        for line in _NEWLINE.split(text[:-1] if text.endswith("\n") else text) if text else ():
            event = self.line(line)
            if event is not None:
                yield event

    def _clock_goes_back_in(self, data: bytes) -> bool:
        """Whether the block's first or last stamped line is earlier than the time before it (cheap: two reads)."""
        first = last = None
        clock = self.clock.copy()  # a probe out of line order must not move the source's year
        for raw in data[:PROBE_BYTES].split(b"\n")[:PROBE_LINES]:
            if raw[:1] in _STAMP_START_BYTES:
                first = _read_time(clock, raw.decode("utf-8", errors="replace"), None)
                if first is not None:
                    break
        for raw in reversed(data[-PROBE_BYTES:].split(b"\n")[-PROBE_LINES:]):
            if raw[:1] in _STAMP_START_BYTES:
                last = _read_time(clock, raw.decode("utf-8", errors="replace"), None)
                if last is not None:
                    break
        before = self.latest
        return (first is not None and before is not None and first < before - CLOCK_JUMP_S) or \
            (first is not None and last is not None and last < first - CLOCK_JUMP_S)

    def _observe(self, t: float, line_no: int) -> None:
        """Times in the order their lines stand: one earlier than the latest by more than CLOCK_JUMP_S is a clock
        that went back (a clock step, two files' lines concatenated); a new segment starts there."""
        if self.latest is not None and t < self.latest - CLOCK_JUMP_S:
            self.jump_count += 1
            if len(self.jumps) < MAX_CLOCK_JUMPS:
                self.jumps.append({"at": f"{self.source}:{line_no}", "jump_s": round(t - self.latest, 3),
                                   "from": iso_utc(self.latest), "to": iso_utc(t), "step": None})
            self.latest = t
        elif self.latest is None or t > self.latest:
            self.latest = t

    # ------------------------------------------------------------------- lines
    def line(self, raw: str | tuple[str, float | None, str | None], *, prefiltered: bool = False) -> Event | None:
        """The event of one line, or None; ``prefiltered``: the line is known to hold a reader's keyword."""
        self.line_no += 1
        line_no = self.line_no
        clock, state, by_worker = self.clock, self.state, self.by_worker
        given_t = None
        line_worker = self.worker
        if isinstance(raw, tuple):  # (text, time, worker) from a source that stamps entries (Cloud Logging)
            raw, given_t, line_worker = raw
        line = clean(raw)
        pod, line = kubectl_worker(line)
        if pod is not None:
            line_worker = pod
        # Times are read lazily (parsing every prefix was half the cost): the source's first timed line, each
        # worker's first, every event line, and at the end the last timed line.
        stampable = line[:1] in STAMP_STARTS
        t = None
        if stampable:
            self.last_stamped.append((line_no, line))
            if line_worker is not None:
                self.last_by_worker[line_worker] = (line, given_t)
            if self.first_t is None or (line_worker is not None and line_worker not in by_worker):
                t = _read_time(clock, line, given_t)
                if t is not None:
                    self.first_t = t if self.first_t is None else self.first_t
                    if line_worker is not None:
                        by_worker.setdefault(line_worker, [t, t])
            elif self.observe_every_line:
                t = _read_time(clock, line, given_t)
            if t is not None:
                self._observe(t, line_no)
        elif given_t is not None:
            self.last_given = given_t
            if self.first_t is None:
                self.first_t = t = _read_time(clock, line, given_t)
            if line_worker is not None:
                self.last_by_worker[line_worker] = (line, given_t)
                by_worker.setdefault(line_worker, [given_t, given_t])
        if not prefiltered and self.any_keyword is not None and not self.any_keyword.search(line):
            return None
        for reader in self.readers:
            if reader.keywords and not any(k in line for k in reader.keywords):
                continue
            hit = reader.first_hit(line)
            if hit is None:
                continue
            pattern, m = hit
            if t is None and (stampable or given_t is not None):
                t = _read_time(clock, line, given_t)
                if t is not None:
                    self._observe(t, line_no)
            if t is not None:
                state["timed_events"] += 1
            event = self._event(reader, pattern, m, line, line_no, line_worker, t)
            if self.jumps and event.kind is Kind.STEP and self.jumps[-1]["at"] == event.where:
                self.jumps[-1]["step"] = event.step  # the clock went back on this step's line
            return event
        return None

    def _event(self, reader: LineReader, pattern: Pattern, m: re.Match, line: str, line_no: int,
               line_worker: str | None, t: float | None) -> Event:
        clock, counters = self.clock, self.counters
        groups = m.groupdict()
        event = Event(pattern.kind, t, worker=line_worker, framework=reader.framework, source=self.source,
                      line_no=line_no, text=line[:MAX_TEXT_CHARS], mode=pattern.mode or groups.get("mode"))
        event.step = _int(groups.get("step"))
        if event.step is None and groups.get("path"):
            n = TRAILING_NUMBER.search(groups["path"].rstrip("`'\"./"))
            event.step = int(n.group(1)) if n else None
        if groups.get("approx_step"):
            event.step, event.approx = steps.approx_int(groups["approx_step"]), True
        if groups.get("seconds"):
            event.seconds = float(groups["seconds"])
        elif groups.get("dur"):
            event.seconds = duration_s(groups["dur"])
        if groups.get("code") is not None:
            event.code = int(groups["code"])
        if groups.get("date"):
            d = ASCTIME.search(groups["date"])
            if d:
                event.t = asctime_seconds(d, clock.tz)
                if event.t is not None:
                    clock.anchor(event.t)
                    if self.first_t is None:
                        self.first_t = event.t
                    self.last_t = event.t if self.last_t is None else max(self.last_t, event.t)
        if groups.get("asctime") and event.t is None:
            d = ASCTIME.search(groups["asctime"])
            event.t = asctime_seconds(d, clock.tz) if d else None
        if groups.get("tod") and event.t is None:
            tod = time_of_day_s(groups["tod"])
            if tod is not None:
                if self.tod_base is None:
                    base = self.last_t if self.last_t is not None else self.first_t
                    self.tod_base = (base // 86400 * 86400) if base is not None else 0.0
                elif self.tod_last is not None and tod < self.tod_last - 43200:  # past midnight
                    self.tod_base += 86400
                self.tod_last = tod
                event.t = self.tod_base + tod
                if self.first_t is None:  # no date anywhere: a time of day times steps, not the job
                    self.state["time_of_day_only"] = True
                self.last_t = event.t if self.last_t is None else max(self.last_t, event.t)
        if groups.get("epoch"):
            counters.keras_epoch = int(groups["epoch"])
        if groups.get("epoch_batch"):  # Keras: a batch within an unfinished epoch
            event.step = (counters.keras_epoch - 1) * int(groups["epoch_total"]) + int(groups["epoch_batch"])
        elif groups.get("epoch_steps"):  # Keras: an epoch's last line
            event.seconds = duration_s(groups["dur"]) if groups.get("dur") else None
            event.step = counters.keras_epoch * int(groups["epoch_steps"])
        elif reader.framework == "hf-trainer" and pattern.kind is Kind.STEP:
            counters.hf_logs += 1
            event.step, event.approx, event.mode = counters.hf_logs, True, "logging-interval"
        return event

    # ------------------------------------------------------------------ finish
    def finish(self) -> None:
        clock, state = self.clock, self.state
        end_t = None
        for end_no, candidate in reversed(self.last_stamped):  # a line may start like a stamp and hold none
            end_t = _read_time(clock, candidate, None)
            if end_t is not None:
                self._observe(end_t, end_no)
                break
        known = [x for x in (end_t, self.last_t, self.last_given) if x is not None]
        end_t = max(known) if known else None
        for worker, (line, given) in self.last_by_worker.items():
            wt = _read_time(clock, line, given)
            if wt is not None and worker in self.by_worker:
                self.by_worker[worker][1] = max(self.by_worker[worker][1], wt)
        state["lines"] += self.line_no
        state["first_t"] = self.first_t if state.get("first_t") is None else state["first_t"]
        state["last_t"] = end_t if end_t is not None else state.get("last_t")
        state["year_source"] = clock.year_source
        state["clock_jumps"] = state.get("clock_jumps", []) + self.jumps
        state["clock_jump_count"] = state.get("clock_jump_count", 0) + self.jump_count




_NEWLINE = re.compile(r"\r\n|\r|\n")  # as universal newlines read them
_STAMP_START_BYTES = frozenset(bytes([c]) for c in b"IWEF[0123456789")
