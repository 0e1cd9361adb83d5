"""Reports of repeated CI runs of one job, for the history-gate tests: further runs of the real
capture's report (the ``real_report`` fixture), their step times drawn from its own step times."""

from __future__ import annotations

import copy

import numpy as np

RUN_STEPS = 100  # steps one CI profiling run summarises


def another_run(report: dict, seed: int, slowdown: float = 1.0) -> dict:
    """The report of another run of the same job: its step times drawn from the real capture's own
    step-time distribution (run-to-run noise), optionally all slower by ``slowdown``."""
    steps = np.asarray([row["step_ms"] for row in report["breakdown"]["per_step"]], dtype=float)
    drawn = np.random.default_rng(seed).choice(steps, RUN_STEPS) * slowdown
    doc = copy.deepcopy(report)
    doc["kpis"]["step_time_median_ms"] = float(np.median(drawn))
    doc["kpis"]["step_time_mean_ms"] = float(drawn.mean())
    return doc
