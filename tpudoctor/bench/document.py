"""The bench JSON document, which is also the baseline file: versioned, keyed, validated.

One shape for both so a saved run can serve as the next run's baseline. The ``key`` says what
the numbers are comparable with; ``measurement.samples`` holds every timed window (compile
excluded) because the gate needs the samples, not one summary number; ``measurement.steady_state`` says
how many head windows were warm-up (``tpudoctor.bench.steady``), and the median, IQR and the gate use the rest. ``findings`` holds
the outcome in the shape of check results (``tpudoctor.bench.findings``); it is optional, so
documents written before it still read.
"""

from __future__ import annotations

import datetime as _dt
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tpudoctor.bench.steady import steady_state

SCHEMA_VERSION = "1.2"  # 1.1: measurement.steady_state, the "unknown" verdict, noise figures; 1.2: confirmation
# runs, the machine's load, a baseline's process medians
SCHEMA_NAME = "bench_result"
DOCUMENT_KIND = "bench"
METRIC = {"name": "examples_per_s", "unit": "examples/s", "direction": "higher_is_better"}


def build_document(run_result: Mapping[str, Any], *, tool_version: str, warmup_windows_allowed: int = 0,
                   ) -> dict[str, Any]:
    """The bench document for one finished reference run (the ``run_result`` event's value); up to
    ``warmup_windows_allowed`` head windows are dropped where they read as warm-up."""
    device = run_result["device"]
    versions = run_result.get("versions") or {}
    framework = run_result.get("framework", "tensorflow")
    samples = [float(s) for s in run_result["examples_per_s"]]
    steady = steady_state(samples, max_dropped=warmup_windows_allowed)
    q1, q3 = (float(v) for v in np.percentile(steady.kept, [25, 75]))
    return with_findings({
        "schema_version": SCHEMA_VERSION,
        "kind": DOCUMENT_KIND,
        "tool": {"name": "tpudoctor", "version": tool_version},
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "host": socket.gethostname(),
        "key": {
            "model": run_result["model"],
            "model_version": run_result["model_version"],
            "accelerator_type": device.get("accelerator_type"),
            "topology": device.get("topology"),
            "framework": framework,
            "framework_version": versions.get(framework),
            "libtpu_version": versions.get("libtpu"),
            "global_batch_size": int(run_result["global_batch_size"]),
            "per_replica_batch_size": int(run_result["per_replica_batch_size"]),
        },
        "environment": {"device": dict(device), "versions": dict(versions), "replicas": int(run_result["replicas"])},
        "metric": dict(METRIC),
        "measurement": {
            "steps_per_window": int(run_result["steps_per_window"]),
            "windows": len(samples),
            "samples": samples,
            "steady_state": steady.to_dict(),
            "median": float(np.median(steady.kept)),
            "iqr": q3 - q1,
            "compile_time_ms": float(run_result["compile_time_ms"]),
            "step_time_ms_median": float(run_result["step_time_ms_median"]),
            "loss_start": float(run_result["loss_start"]),
            "loss_end": float(run_result["loss_end"]),
            "loss_dropped": bool(run_result["loss_dropped"]),
            "input": run_result.get("input", "in-memory"),
            "injected_step_delay_ms": float(run_result.get("injected_step_delay_ms") or 0.0),
            "machine": run_result.get("machine"),
        },
        "profile_dir": run_result.get("profile_dir"),
        "comparison": None,
    })


def middle_process(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """Of several runs of one configuration, each in a fresh process, the one whose steady median is the
    middle one, with every process's median recorded (``measurement.process_medians``): a process can settle
    20 % slower than the next on the same machine (thread placement, the host), and a baseline taken in such
    a process would hide a real slowdown of that size."""
    medians = [d["measurement"]["median"] for d in documents]
    middle = sorted(range(len(documents)), key=lambda i: medians[i])[(len(documents) - 1) // 2]
    chosen = documents[middle]
    chosen["measurement"]["process_medians"] = medians
    chosen["measurement"]["process_kept"] = middle
    return with_findings(chosen)


def with_findings(document: dict[str, Any]) -> dict[str, Any]:
    """Set ``findings`` from the measurement and the comparison (call again after setting ``comparison``)."""
    from tpudoctor.bench.findings import bench_findings

    document["findings"] = [finding.to_dict() for finding in bench_findings(document)]
    return document


def as_baseline(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document to commit as a baseline: the same run, without this run's comparison."""
    baseline = dict(document)
    baseline["comparison"] = None
    return with_findings(baseline)


def validate_document(document: Any) -> None:
    from tpudoctor.schema import validate

    validate(document, SCHEMA_NAME)


def busy_share(measurement: Mapping[str, Any]) -> float | None:
    """The share of the machine's CPU that others (processes and the hypervisor) took while the windows were
    timed; None when the run did not record it (an older document, not Linux)."""
    machine = measurement.get("machine") or {}
    others, steal = machine.get("others_cpu_share"), machine.get("steal_share")
    return None if others is None else float(others) + float(steal or 0.0)


def load_baseline(path: str | Path) -> dict[str, Any]:
    """Read and validate a baseline file; every problem is an ``InputError`` (exit 2) naming the file."""
    from tpudoctor.report_file import read_document

    return read_document(path, what="bench document", schema=SCHEMA_NAME, schema_version=SCHEMA_VERSION,
                         hint="create one with: tpudoctor bench --model NAME --save-baseline FILE")
