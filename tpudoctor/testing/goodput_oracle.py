"""Jobs recorded by ml-goodput-measurement's own GoodputRecorder into the fake Cloud Logging, and the figures
its GoodputCalculator and ``tpudoctor goodput --goodput-job`` make of the same entries (side by side).

Used by ``tests/goodput/test_goodput_oracle.py`` (which asserts they agree) and ``benchmarks/goodput_oracle.py``
(which prints them). The timings are synthetic: every recorder call takes an explicit time, nothing sleeps.
Checkpoint saves and restores are written as Orbax's checkpoint logger writes them (its step statistics, with
the job name) through a real ``google-cloud-logging`` logger, since the recorder itself records none.

The library builds its client with ``google.cloud.logging.Client()`` and no arguments (goodput.py,
``_CloudLogger``): it offers no way to pass an endpoint or credentials, so ``library_client`` swaps that
constructor for one that adds the fake's endpoint, anonymous credentials and the REST transport, and the
monitored-resource probe of the metadata server answers "not on Google Cloud" without a network call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tpudoctor.goodput.buckets import BUCKETS

PROJECT, LOG_NAME = "my-project", "goodput"
T0 = _dt.datetime(2026, 3, 2, 8, 0, 0, tzinfo=_dt.timezone.utc)
LIBRARY_BUCKETS = BUCKETS
"""tpudoctor's bucket names are the library's BadputType names."""


def at(seconds: float) -> _dt.datetime:
    return T0 + _dt.timedelta(seconds=seconds)


@contextlib.contextmanager
def library_client(fake) -> Iterator[None]:
    """While inside, ``google.cloud.logging.Client()`` (as the library calls it) talks to ``fake``."""
    import google.cloud.logging
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.logging_v2.handlers import _monitored_resources

    real_client, real_probe = google.cloud.logging.Client, _monitored_resources.retrieve_metadata_server

    def client(*_args: Any, **_kwargs: Any):
        return real_client(project=PROJECT, credentials=AnonymousCredentials(), _use_grpc=False,
                           client_options={"api_endpoint": fake.endpoint})

    setattr(google.cloud.logging, "Client", client)  # noqa: B010 - a class replaced by a function on purpose
    _monitored_resources.retrieve_metadata_server = lambda *a, **k: None  # off Google Cloud: a global resource
    try:
        yield
    finally:
        setattr(google.cloud.logging, "Client", real_client)  # noqa: B010
        _monitored_resources.retrieve_metadata_server = real_probe


class Job:
    """One job's recording: the library's recorder, and Orbax-shaped checkpoint entries beside it."""

    def __init__(self, name: str):
        from ml_goodput_measurement import goodput

        self.name = name
        self.recorder = goodput.GoodputRecorder(name, LOG_NAME, logging_enabled=True,
                                                background_max_latency_s=0.02)
        import google.cloud.logging

        self._checkpoint_logger = google.cloud.logging.Client().logger(LOG_NAME)

    def save(self, step: int, start_s: float, blocking_s: float, *, directory: str = "gs://run-bucket/ckpt",
             synchronous: bool = True) -> None:
        """Orbax CheckpointManager.save's step statistics (checkpoint_manager.py ``log_entry``)."""
        self._checkpoint({"step": step, "event_type": "save", "directory": directory, "reached_preemption": False,
                          "preemption_received_at": None, "synchronous": synchronous,
                          "wait_for_prev_start_time": at(start_s).timestamp(), "wait_for_prev_duration_secs": 0.0003,
                          "checkpointer_blocking_start_time": at(start_s + 0.0003).timestamp(),
                          "checkpointer_blocking_duration_secs": blocking_s - 0.3,
                          "get_old_steps_start_time": at(start_s + blocking_s - 0.2).timestamp(),
                          "get_old_steps_duration_secs": 1e-05,
                          "checkpoint_manager_blocking_start_time": at(start_s).timestamp(),
                          "checkpoint_manager_blocking_duration_secs": blocking_s})

    def restore(self, step: int, start_s: float, seconds: float, *, directory: str = "gs://run-bucket/ckpt") -> None:
        """Orbax CheckpointManager.restore's step statistics."""
        self._checkpoint({"step": step, "event_type": "restore", "directory": directory,
                          "checkpointer_start_time": at(start_s + 0.01).timestamp(),
                          "checkpointer_duration_secs": seconds - 0.05,
                          "checkpoint_manager_start_time": at(start_s).timestamp(),
                          "checkpoint_manager_duration_secs": seconds})

    def _checkpoint(self, stats: dict[str, Any]) -> None:
        # stamped now, like the recorder's entries: Cloud Logging returns them in this order
        self._checkpoint_logger.log_struct({"job_name": self.name, **stats}, severity="INFO",
                                           timestamp=_dt.datetime.now(_dt.timezone.utc))

    def run(self, *, start_s: float, init_s: float, prep_s: float, data_s: float, first_step: int, steps: int,
            compile_s: float, step_s: float | Callable[[int], float], in_loop_data_s: float = 0.0,
            saves: dict[int, float] | None = None, restore: tuple[int, float] | None = None,
            evals: dict[int, float] | None = None, end: str = "finished", tail_s: float = 0.0,
            gap_s: float = 0.0) -> float:
        """One start of the job, as MaxText's train loop records it; returns the time it ended (finished) or
        failed. ``saves`` maps a step to its blocking save seconds (after that step), ``evals`` a step to an
        evaluation (a custom badput event) after it; ``gap_s`` pauses between the milestones."""
        r = self.recorder
        t = start_s
        r.record_job_start_time(at(t))
        t += gap_s
        r.record_tpu_init_start_time(at(t))
        t += init_s
        r.record_tpu_init_end_time(at(t))
        t += gap_s
        r.record_training_preparation_start_time(at(t))
        if restore is not None:
            self.restore(restore[0], t + 1.0, restore[1])
        t += prep_s
        r.record_training_preparation_end_time(at(t))
        r.record_data_loading_start_time(at(t))
        t += data_s
        r.record_data_loading_end_time(at(t))
        t += gap_s
        for i in range(steps):
            n = first_step + i
            r.record_step_start_time(n, at(t))
            if in_loop_data_s:
                r.record_data_loading_start_time(at(t))
                r.record_data_loading_end_time(at(t + in_loop_data_s))
            t += (compile_s if i == 0 else 0.0) + (step_s(n) if callable(step_s) else step_s)
            if saves and n in saves:
                self.save(n, t, saves[n])
                t += saves[n]
            if evals and n in evals:
                r.record_custom_badput_event_start_time(at(t), custom_badput_event_type="eval_step")
                t += evals[n]
                r.record_custom_badput_event_end_time(at(t), custom_badput_event_type="eval_step")
        if end == "finished":
            t += tail_s
            r.record_job_end_time(at(t))
        else:  # "preempted": the last step recorded never finished; "running": the caller records more
            t += tail_s
        return t

    def flush(self) -> None:
        self.recorder.flush()


@dataclasses.dataclass
class Figures:
    """One side's account of a job: seconds and percent of wall time per bucket."""

    wall_s: float
    productive_s: float
    goodput_percent: float
    seconds: dict[str, float]
    percent: dict[str, float]
    custom_s: dict[str, float]
    disruptions: int
    max_productive_step: int


def library_figures(job_name: str, cache_dir: str) -> Figures:
    """The library's GoodputCalculator on the job's entries (get_job_goodput, then get_job_goodput_details)."""
    from ml_goodput_measurement import goodput

    calc = goodput.GoodputCalculator(job_name, LOG_NAME, cache_dir=cache_dir)
    percent_goodput, breakdown, _max_step = calc.get_job_goodput(include_badput_breakdown=True)
    details = calc.get_job_goodput_details()
    badput = details["badput_time"]

    def flat(kind) -> float:
        value = badput.get(kind, 0.0)
        return float(value) if not isinstance(value, dict) else float(sum(value.values()))

    custom = badput.get(goodput.BadputType.CUSTOM_BADPUT_EVENTS) or {}
    return Figures(wall_s=float(details["total_elapsed_time"]),
                   productive_s=float(details["goodput_time"][goodput.GoodputType.TOTAL]),
                   goodput_percent=float(percent_goodput),
                   seconds={b: flat(goodput.BadputType[b]) for b in LIBRARY_BUCKETS},
                   percent={b: float(breakdown[goodput.BadputType[b]]) for b in LIBRARY_BUCKETS},
                   custom_s={k: float(v) for k, v in custom.items()},
                   disruptions=int(details["disruption_count"]),
                   max_productive_step=int(details["max_productive_step"]))


def tpudoctor_figures(job_name: str, out_dir: Path) -> tuple[Figures, dict[str, Any]]:
    """``tpudoctor goodput --goodput-job`` through the CLI against the same fake (TPUDOCTOR_LOGGING_ENDPOINT set
    by the caller); the figures of its recorder account, and the whole ``instrumented`` section."""
    from tpudoctor.cli import main

    out = out_dir / f"{job_name}.json"
    code = main(["goodput", "--tpu", "train-v5p", "--project", PROJECT, "--since", "30d",
                 "--goodput-job", job_name, "--goodput-log", LOG_NAME, "--format", "json", "-o", str(out)])
    if code != 0:
        raise RuntimeError(f"tpudoctor goodput exited {code}")
    inst = json.loads(out.read_text())["instrumented"]
    acc = inst["account"]
    return Figures(wall_s=acc["wall_s"], productive_s=acc["productive_s"], goodput_percent=acc["goodput_percent"],
                   seconds={b: acc["badput"][b]["seconds"] for b in LIBRARY_BUCKETS},
                   percent={b: acc["badput"][b]["percent"] for b in LIBRARY_BUCKETS},
                   custom_s={k: v["seconds"] for k, v in acc["custom_badput_events"].items()},
                   disruptions=acc["restarts"], max_productive_step=acc["max_productive_step"]), inst


# The scenarios: (name, what it shows, how it records). Step times in seconds, as a v5p job's might be.
def clean_run(job: Job) -> None:
    """Start-up, 1 min 50 s of compilation in the first step, 120 steps of 2.4 s with in-loop data loading
    (async: not badput), a 6 s synchronous save every 40 steps, 8 s of shutdown after the last step."""
    job.run(start_s=0, gap_s=1.5, init_s=42, prep_s=75, data_s=14, first_step=0, steps=120, compile_s=110,
            step_s=2.4, in_loop_data_s=0.35, saves={39: 6.0, 79: 6.0, 119: 6.0}, tail_s=8)


def preempted_and_restarted(job: Job) -> None:
    """Saves after steps 49 and 99; preempted 2.9 s into step 117 (steps 100..116 done again), 4 min down,
    restarted: restore of step 99 (38 s) inside training preparation, compilation again, steps 100..199."""
    failed = job.run(start_s=0, gap_s=1.0, init_s=40, prep_s=70, data_s=12, first_step=0, steps=118,
                     compile_s=105, step_s=2.5, saves={49: 7.0, 99: 7.0}, end="preempted", tail_s=0.4)
    job.run(start_s=failed + 240, gap_s=1.0, init_s=44, prep_s=95, data_s=12, first_step=100, steps=100,
            compile_s=100, step_s=2.5, saves={149: 7.0, 199: 7.0}, restore=(99, 38.0), tail_s=5)


def long_data_loading(job: Job) -> None:
    """A cold dataset: 9 min of synchronous data loading before the loop, then slow in-loop loads (async),
    and an evaluation of 25 s every 30 steps (custom badput events)."""
    job.run(start_s=0, gap_s=0.5, init_s=38, prep_s=60, data_s=540, first_step=0, steps=90, compile_s=95,
            step_s=lambda n: 3.0 + (0.4 if n % 7 == 0 else 0.0), in_loop_data_s=1.2,
            evals={29: 25.0, 59: 25.0, 89: 25.0}, tail_s=4)


def slow_checkpoint_saves(job: Job) -> None:
    """Synchronous saves of 48 s to gs:// every 20 steps, each logged by two workers with slightly different
    times (the library averages them per step), and a local save (emergency checkpointing) at step 50."""
    def two_workers(n: int, start: float, seconds: float) -> None:
        job.save(n, start, seconds)
        job.save(n, start, seconds + 2.0)

    t = job.run(start_s=0, gap_s=0.8, init_s=41, prep_s=66, data_s=10, first_step=0, steps=20, compile_s=100,
                step_s=2.2, end="running")
    two_workers(19, t, 48.0)
    # the rest of the job continues the same start: steps 20..79 after the save
    r, t = job.recorder, t + 49.0
    for n in range(20, 80):
        r.record_step_start_time(n, at(t))
        t += 2.2
        if n in (39, 59, 79):
            two_workers(n, t, 48.0)
            t += 49.0
        if n == 50:
            job.save(n, t, 3.0, directory="/local/emergency-ckpt")
            t += 3.0
    r.record_job_end_time(at(t + 6.0))


SCENARIOS: dict[str, Callable[[Job], None]] = {
    "clean": clean_run,
    "preempted-restarted": preempted_and_restarted,
    "long-data-loading": long_data_loading,
    "slow-checkpoint-saves": slow_checkpoint_saves,
}


def record(fake, scenario: str) -> str:
    """Record ``scenario`` into ``fake`` through the library's recorder; the job's name."""
    job = Job(f"oracle-{scenario}")
    SCENARIOS[scenario](job)
    job.flush()
    return job.name


def side_by_side(fake, scenario: str, out_dir: Path) -> tuple[Figures, Figures, dict[str, Any]]:
    """(library, tpudoctor, tpudoctor's instrumented section) for one scenario; ``fake`` is running and
    TPUDOCTOR_LOGGING_ENDPOINT points at it."""
    with library_client(fake):
        name = record(fake, scenario)
        with tempfile.TemporaryDirectory(dir=out_dir) as cache:
            lib = library_figures(name, cache)
    ours, inst = tpudoctor_figures(name, out_dir)
    return lib, ours, inst
