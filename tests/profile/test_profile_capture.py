"""Capture for real: a TensorFlow job with a profiler server on loopback, and the in-process helpers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from paths import REPO

import tpudoctor.profile

TRAINING_JOB = textwrap.dedent("""
    import sys, time
    import tensorflow as tf
    tf.profiler.experimental.server.start(int(sys.argv[1]))
    model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = tf.random.normal((256, 32)); y = tf.random.normal((256, 1))
    print("READY", flush=True)
    deadline = time.time() + float(sys.argv[2])
    while time.time() < deadline:
        model.fit(x, y, epochs=1, batch_size=32, verbose=0)
""")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}


@pytest.mark.slow
def test_capture_from_a_live_tensorflow_job_loads(tmp_path):
    pytest.importorskip("tensorflow", reason="profile capture needs TensorFlow's profiler client")
    port = _free_port()
    job = subprocess.Popen([sys.executable, "-c", TRAINING_JOB, str(port), "120"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, env=_env())
    try:
        started = time.monotonic()
        line = job.stdout.readline()
        assert line.strip() == "READY", f"training job did not start (exit {job.poll()})"
        assert time.monotonic() - started < 90
        logdir = tmp_path / "logdir"
        result = subprocess.run(
            [sys.executable, "-m", "tpudoctor", "profile", "capture", "--service-addr", f"127.0.0.1:{port}",
             "--duration", "2s", "--logdir", str(logdir)],
            capture_output=True, text=True, timeout=180, env=_env(),
        )
        assert result.returncode == 0, result.stderr[-2000:]
        written = [Path(line) for line in result.stdout.split()]
        assert written and all(path.exists() and path.name.endswith(".xplane.pb") for path in written)
        assert str(logdir / "plugins" / "profile") in str(written[0])
        capture = tpudoctor.profile.load(logdir)
        host = next(iter(capture.hosts.values()))
        assert "/host:CPU" in set(host.planes["plane_name"])
        assert len(host.events) > 100
        analyze = subprocess.run([sys.executable, "-m", "tpudoctor", "profile", "analyze", str(logdir)],
                                 capture_output=True, text=True, timeout=120, env=_env())
        assert analyze.returncode in (0, 1) and "/host:CPU" in analyze.stdout  # 1: a FAIL finding
    finally:
        job.kill()
        job.wait(timeout=30)


@pytest.mark.slow
def test_capture_from_nothing_fails_clearly(tmp_path):
    pytest.importorskip("tensorflow", reason="profile capture needs TensorFlow's profiler client")
    result = subprocess.run(
        [sys.executable, "-m", "tpudoctor", "profile", "capture", "--service-addr", f"127.0.0.1:{_free_port()}",
         "--duration", "1s", "--retries", "1", "--logdir", str(tmp_path)],
        capture_output=True, text=True, timeout=180, env=_env(),
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "no profile captured from 127.0.0.1" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_trace_helper_with_jax(tmp_path):
    pytest.importorskip("jax")
    code = textwrap.dedent(f"""
        import jax, jax.numpy as jnp
        import tpudoctor.profile
        with tpudoctor.profile.trace({str(tmp_path)!r}) as framework:
            assert framework == "jax"
            for _ in range(5):
                jnp.dot(jnp.ones((64, 64)), jnp.ones((64, 64))).block_until_ready()
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=_env())
    assert result.returncode == 0, result.stderr[-2000:]
    capture = tpudoctor.profile.load(tmp_path)
    host = next(iter(capture.hosts.values()))
    assert "/host:CPU" in set(host.planes["plane_name"])
    assert host.events["name"].astype(str).str.contains("dot").any()


@pytest.mark.slow
def test_trace_helper_with_tensorflow(tmp_path):
    pytest.importorskip("tensorflow")
    code = textwrap.dedent(f"""
        import tensorflow as tf
        import tpudoctor.profile
        step = tf.function(lambda x: tf.reduce_sum(tf.matmul(x, x)))
        with tpudoctor.profile.trace({str(tmp_path)!r}) as framework:
            assert framework == "tensorflow"
            for _ in range(5):
                step(tf.ones((64, 64)))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=_env())
    assert result.returncode == 0, result.stderr[-2000:]
    host = next(iter(tpudoctor.profile.load(tmp_path).hosts.values()))
    assert "/host:CPU" in set(host.planes["plane_name"])
    assert host.events["name"].astype(str).str.contains("MatMul").any()


def test_trace_helper_needs_a_framework(monkeypatch):
    from tpudoctor.errors import UsageError

    for name in ("jax", "tensorflow"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(UsageError, match="needs TensorFlow or JAX"):
        with tpudoctor.profile.trace("/tmp/unused"):
            pass
