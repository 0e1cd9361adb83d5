"""Opt-in live probe (``--probe``): each installed framework lists its devices in a subprocess.

A subprocess keeps TensorFlow and JAX out of tpudoctor's own process and lets a hung TPU
initialisation (a multi-host slice started on one worker waits forever) end at a timeout.
The child's stderr is run through the log diagnoser, so a failed start names its cause.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.provider import FactProvider

PROBE_TIMEOUT_S = 120.0
MARKER = "TPUDOCTOR_PROBE "
STDERR_TAIL_CHARS = 20000

JAX_PROBE = r"""
import json
out = {"framework": "jax"}
try:
    import jax
    out["version"] = jax.__version__
    devices = jax.local_devices()
    out["platform"] = jax.default_backend()
    out["local_device_count"] = len(devices)
    out["device_count"] = jax.device_count()
    out["process_count"] = jax.process_count()
    out["device_kinds"] = sorted({d.device_kind for d in devices})
    out["devices"] = [str(d) for d in devices[:16]]
    out["ok"] = True
except Exception as exc:
    out["ok"] = False
    out["error"] = f"{type(exc).__name__}: {exc}"[:2000]
print("TPUDOCTOR_PROBE " + json.dumps(out), flush=True)
"""

# The guide's way: resolve the local TPU, connect, initialise, list the logical TPU devices.
TF_PROBE = r"""
import json
out = {"framework": "tensorflow"}
try:
    import tensorflow as tf
    out["version"] = tf.__version__
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="local")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        out["tpu_initialized"] = True
    except Exception as exc:
        out["tpu_initialized"] = False
        out["tpu_init_error"] = f"{type(exc).__name__}: {exc}"[:2000]
    tpus = tf.config.list_logical_devices("TPU")
    everything = tf.config.list_logical_devices()
    out["tpu_device_count"] = len(tpus)
    out["local_device_count"] = len(tpus) if tpus else len(everything)
    out["platform"] = "tpu" if tpus else "cpu"
    out["devices"] = [d.name for d in everything[:16]]
    out["ok"] = True
except Exception as exc:
    out["ok"] = False
    out["error"] = f"{type(exc).__name__}: {exc}"[:2000]
print("TPUDOCTOR_PROBE " + json.dumps(out), flush=True)
"""

TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-tpu", "tf-nightly", "tensorflow-cpu")


def run_probe(framework: str, script: str, timeout_s: float) -> dict[str, Any]:
    from tpudoctor.logdiag import diagnose_text

    started = time.monotonic()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=timeout_s, env=env, check=False)
        stdout, stderr, returncode, timed_out = done.stdout, done.stderr, done.returncode, False
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        returncode, timed_out = None, True
    result: dict[str, Any] = {"framework": framework, "ok": False}
    for line in stdout.splitlines():
        if line.startswith(MARKER):
            result = json.loads(line[len(MARKER):])
    result.update({"timed_out": timed_out, "returncode": returncode,
                   "duration_s": round(time.monotonic() - started, 2)})
    if timed_out:
        result["error"] = f"did not list its devices within {timeout_s:g}s"
    elif "error" not in result and not result.get("ok"):
        result["error"] = f"exited with status {returncode} before reporting"
    tail = stderr[-STDERR_TAIL_CHARS:]
    found = diagnose_text(tail, f"{framework} probe stderr")
    if found:
        result["diagnosis"] = found[0].to_dict()
    result["stderr_tail"] = tail.splitlines()[-15:]
    return result


class FrameworkProbeProvider(FactProvider):
    name = "framework_probe"
    provides = ("runtime.probe",)
    needs = ("packages.installed",)
    timeout_s = 2 * PROBE_TIMEOUT_S + 30

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        if not ctx.options.probe:
            return {"runtime.probe": Unavailable("live probe not requested (add --probe to start the frameworks and list their devices)")}
        installed = facts.value("packages.installed") or {}
        probes: dict[str, Any] = {}
        if "jax" in installed:
            probes["jax"] = run_probe("jax", JAX_PROBE, PROBE_TIMEOUT_S)
        if any(d in installed for d in TF_DISTRIBUTIONS):
            probes["tensorflow"] = run_probe("tensorflow", TF_PROBE, PROBE_TIMEOUT_S)
        if not probes:
            return {"runtime.probe": Unavailable("neither JAX nor TensorFlow is installed; nothing to probe")}
        return {"runtime.probe": probes}
