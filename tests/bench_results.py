"""A bench run's result as the runner returns it (CPU, dense model, six windows), for the bench document and
the report pipeline tests: ``run_result(samples=..., **overrides)``."""

from __future__ import annotations


def run_result(samples=(1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0), **overrides):
    result = {
        "model": "dense", "model_version": "dense-0123456789ab", "framework": "tensorflow",
        "versions": {"python": "3.11.7", "tensorflow": "2.21.0", "keras": "3.15.1", "libtpu": None},
        "device": {"platform": "CPU", "device_kind": "AMD EPYC", "device_count": 1,
                   "accelerator_type": "cpu:AMD EPYC", "topology": None, "host_count": 1},
        "replicas": 1, "per_replica_batch_size": 128, "global_batch_size": 128, "steps_per_window": 20,
        "windows": len(samples), "input": "in-memory", "compile_time_ms": 900.0,
        "examples_per_s": list(samples), "examples_per_s_median": float(sorted(samples)[len(samples) // 2]),
        "step_time_ms_median": 0.13, "loss_start": 26.0, "loss_end": 0.3, "loss_dropped": True, "profile_dir": None,
    }
    result.update(overrides)
    return result
