"""Picking the distribution strategy and describing the devices it runs on.

On a TPU VM: ``TPUClusterResolver(tpu='local')`` and ``TPUStrategy``, as Cloud TPU code must
run. Anywhere else: TensorFlow's default strategy on the CPU or GPU.
"""

from __future__ import annotations

import glob
import os
import platform
from typing import Any

ACCELERATORS = ("auto", "tpu", "cpu")


def tpu_device_files() -> list[str]:
    """TPU chips show up as /dev/accel* (v2-v4) or /dev/vfio/<group> (v5e and later)."""
    return sorted(glob.glob("/dev/accel*") + [p for p in glob.glob("/dev/vfio/*") if os.path.basename(p).isdigit()])


def wants_tpu(accelerator: str) -> bool:
    if accelerator == "tpu":
        return True
    if accelerator == "cpu":
        return False
    return bool(tpu_device_files()) or bool(os.environ.get("TPU_NAME"))


def make_strategy(accelerator: str = "auto") -> tuple[Any, dict[str, Any]]:
    """(strategy, device description). Raises whatever TensorFlow raises when a TPU is asked for but absent."""
    import tensorflow as tf

    if wants_tpu(accelerator):
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=os.environ.get("TPU_NAME") or "local")
        tf.config.experimental_connect_to_cluster(resolver)
        topology = tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
        mesh = [int(d) for d in getattr(topology, "mesh_shape", []) or []]
        return strategy, {
            "platform": "TPU",
            "device_kind": _tpu_kind(tf),
            "device_count": int(strategy.num_replicas_in_sync),
            "accelerator_type": os.environ.get("TPU_ACCELERATOR_TYPE") or f"tpu-{strategy.num_replicas_in_sync}",
            "topology": os.environ.get("TPU_TOPOLOGY") or ("x".join(map(str, mesh)) if mesh else None),
            "host_count": int(getattr(topology, "num_tasks", 1) or 1),
        }
    strategy = tf.distribute.get_strategy()
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        kind = tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
        return strategy, {"platform": "GPU", "device_kind": kind, "device_count": 1,
                          "accelerator_type": f"gpu:{kind}", "topology": None, "host_count": 1}
    kind = cpu_model()
    return strategy, {"platform": "CPU", "device_kind": kind, "device_count": 1,
                      "accelerator_type": f"cpu:{kind}", "topology": None, "host_count": 1}


def _tpu_kind(tf: Any) -> str:
    for device in tf.config.list_physical_devices("TPU"):
        details = tf.config.experimental.get_device_details(device)
        if details.get("device_name"):
            return str(details["device_name"])
    return "TPU"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"
