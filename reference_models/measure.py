"""The measurement protocol shared by the TensorFlow and JAX runs.

First step (trace and compile) timed apart, one untimed warm-up window, then timed windows
of steady steps, then optionally one profiled window after them so profiling never enters the
throughput samples. Each framework supplies ``run_steps(n) -> loss`` that runs ``n`` steps and
ends with a host sync on the last loss, so a window's time covers device work, not dispatch.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from tpudoctor.reference_models import result_log
from tpudoctor.reference_models.machine import CpuMeter

Emit = Callable[..., None]


def measure_run(
    run_steps: Callable[[int], float],
    *,
    start: dict[str, Any],
    steps_per_window: int,
    windows: int,
    global_batch: int,
    emit: Emit,
    profile_dir: str | None = None,
    profiler: Callable[[str], AbstractContextManager[Any]] | None = None,
    step_delay_ms: float = 0.0,
) -> dict[str, Any]:
    if step_delay_ms > 0:  # a known slowdown for testing a throughput gate: host time added to every step
        run_steps = _delayed(run_steps, step_delay_ms)
    t0 = time.perf_counter()
    loss_start = run_steps(1)
    compile_time_ms = (time.perf_counter() - t0) * 1000.0
    emit(result_log.COMPILE, {"compile_time_ms": compile_time_ms, "loss": loss_start},
         event_type=result_log.INTERVAL_END)

    t0 = time.perf_counter()
    run_steps(steps_per_window)
    emit(result_log.WARMUP, {"steps": steps_per_window, "elapsed_ms": (time.perf_counter() - t0) * 1000.0},
         event_type=result_log.INTERVAL_END)

    samples: list[float] = []
    step_times_ms: list[float] = []
    meter = CpuMeter()  # over all timed windows: one window (~50 ms) is a few clock ticks, too coarse alone
    meter.start()
    loss_end = loss_start
    for window in range(windows):
        t0 = time.perf_counter()
        loss_end = run_steps(steps_per_window)
        elapsed_s = time.perf_counter() - t0
        samples.append(steps_per_window * global_batch / elapsed_s)
        step_times_ms.append(elapsed_s * 1000.0 / steps_per_window)
        emit(result_log.WINDOW, {"window": window + 1, "of": windows, "elapsed_ms": elapsed_s * 1000.0,
                                 "examples_per_s": samples[-1], "step_time_ms": step_times_ms[-1],
                                 "loss": loss_end}, event_type=result_log.INTERVAL_END)
        if not math.isfinite(loss_end):
            raise FloatingPointError(f"loss became {loss_end} in window {window + 1}")
    machine = meter.stop()

    if profile_dir:
        with (profiler or (lambda _d: contextlib.nullcontext()))(profile_dir):
            run_steps(steps_per_window)
        emit(result_log.PROFILE, {"logdir": profile_dir, "steps": steps_per_window})

    samples_sorted = sorted(samples)
    result = {
        **start,
        "compile_time_ms": compile_time_ms,
        "examples_per_s": samples,
        "machine": machine,
        "examples_per_s_median": _median(samples_sorted),
        "step_time_ms_median": _median(sorted(step_times_ms)),
        "loss_start": loss_start,
        "loss_end": loss_end,
        "loss_dropped": bool(loss_end < loss_start),
        "profile_dir": profile_dir,
        "injected_step_delay_ms": step_delay_ms,
    }
    emit(result_log.RUN_RESULT, result)
    return result


def _delayed(run_steps: Callable[[int], float], step_delay_ms: float) -> Callable[[int], float]:
    def run_delayed(steps: int) -> float:
        loss = run_steps(steps)
        time.sleep(steps * step_delay_ms / 1000.0)
        return loss

    return run_delayed


def _median(values: list[float]) -> float:
    n = len(values)
    if n == 0:
        return float("nan")
    mid = n // 2
    return float(values[mid] if n % 2 else (values[mid - 1] + values[mid]) / 2)
