"""Capture a profile from a running job's profiler server, as ``capture_tpu_profile`` does.

The call is TensorFlow's profiler client (``tf.profiler.experimental.client.trace``), which
speaks the profiler gRPC protocol to servers started with
``tf.profiler.experimental.server.start(port)`` or ``jax.profiler.start_server(port)``.
TensorFlow is imported only here, when a capture is asked for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Callable

from tpudoctor.errors import InputError, UsageError

TPU_PROFILER_PORT = 8466
RETRY_PAUSE_S = 2.0


@dataclasses.dataclass(frozen=True)
class CaptureRequest:
    addresses: list[str]  # HOST:PORT of each profiler server
    logdir: str
    duration_ms: int
    attempts: int = 3
    host_tracer_level: int = 2
    python_tracer_level: int = 0
    device_tracer_level: int = 1
    worker_list: str = ""  # TPU pods: every worker, the first address is the coordinator


@dataclasses.dataclass(frozen=True)
class CaptureResult:
    run: str
    files: list[str]
    attempt: int
    elapsed_s: float


def capture(request: CaptureRequest, *, on_progress: Callable[[str], None] = lambda _m: None,
            sleep: Callable[[float], None] = time.sleep) -> CaptureResult:
    """Trace for ``duration_ms`` and return the run folder written under ``logdir``."""
    if not request.addresses:
        raise UsageError("no profiler server address to capture from")
    for address in request.addresses:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise UsageError(f"not a HOST:PORT address: {address!r}", hint="e.g. --service-addr localhost:9012")
    profiler_client, options = _tensorflow_client(request)
    from tpudoctor.captures.capture_files import resolve

    before = _runs(request.logdir, resolve)
    started = time.monotonic()
    service_addr = ",".join(f"grpc://{address}" for address in request.addresses)
    last_error = ""
    for attempt in range(1, request.attempts + 1):
        on_progress(f"attempt {attempt}/{request.attempts}: tracing {request.duration_ms / 1000:g}s")
        try:
            # one tracing attempt per call so that every retry shows in the progress display
            with _native_stdout_to_stderr():
                profiler_client.trace(service_addr, request.logdir, request.duration_ms,
                                      worker_list=request.worker_list, num_tracing_attempts=1, options=options)
        except Exception as exc:  # noqa: BLE001 - tf.errors.* (Unavailable, DeadlineExceeded...) all retry
            last_error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            on_progress(f"attempt {attempt} failed ({last_error[:80]})")
            if attempt < request.attempts:
                sleep(RETRY_PAUSE_S)
            continue
        new_runs = sorted(set(_runs(request.logdir, resolve)) - set(before))
        if new_runs:
            run = new_runs[-1]
            captured = resolve(request.logdir, run)
            return CaptureResult(run=run, files=[host.location for host in captured.hosts], attempt=attempt,
                                 elapsed_s=time.monotonic() - started)
        last_error = "the trace call returned but wrote no .xplane.pb"
    raise InputError(
        f"no profile captured from {', '.join(request.addresses)} after {request.attempts} attempt(s): {last_error}",
        hint="check that the job runs a profiler server on that port (tf.profiler.experimental.server.start(PORT) "
             "or jax.profiler.start_server(PORT)), that it is reachable, and that it runs steps while tracing",
    )


@contextlib.contextmanager
def _native_stdout_to_stderr():
    """TensorFlow's C++ client prints progress on stdout; stdout is for the written paths only."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1 (embedded interpreters)
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _runs(logdir: str, resolve) -> tuple[str, ...]:
    try:
        return resolve(logdir).runs_available
    except (InputError, UsageError):
        return ()


def _tensorflow_client(request: CaptureRequest):
    try:
        from tensorflow.python.profiler import profiler_client, profiler_v2
    except ImportError as exc:
        raise UsageError(
            "profile capture needs TensorFlow's profiler client, and TensorFlow is not installed",
            hint="pip install 'tpudoctor[tf]' (or tensorflow-cpu)",
        ) from exc
    options = profiler_v2.ProfilerOptions(
        host_tracer_level=request.host_tracer_level,
        python_tracer_level=request.python_tracer_level,
        device_tracer_level=request.device_tracer_level,
    )
    return profiler_client, options


def service_addresses_for_tpu(name: str, *, project: str | None, zone: str | None, port: int = TPU_PROFILER_PORT,
                              all_workers: bool = False, timeout_s: float = 30.0, session=None) -> list[str]:
    """``IP:port`` of a Cloud TPU's workers from the TPU API (worker 0 only unless ``all_workers``), through
    the run's Google Cloud session (``tpudoctor.gcp.session``; ``TPUDOCTOR_TPU_ENDPOINT`` for a local fake);
    without one, this process's, each call waiting at most ``timeout_s``."""
    if not project or not zone:
        raise UsageError("--tpu needs a project and a zone", hint="pass --project and --zone "
                         "(or set CLOUDSDK_CORE_PROJECT and CLOUDSDK_COMPUTE_ZONE)")
    from tpudoctor.gcp.errors import ApiCallFailed, user_error
    from tpudoctor.gcp.session import process_session

    cloud = session or process_session(timeout_s)
    api = None
    try:
        api = cloud.tpu
        node = api.get_node(project, zone, name)
    except ApiCallFailed as exc:
        raise user_error(exc.failure, f"cannot look up TPU {name} in {project}/{zone}",
                         identity=api.identity if api else None, project=project, zone=zone,
                         permission="tpu.nodes.get") from None
    addresses = [f"{endpoint['ip_address']}:{port}" for endpoint in node["network_endpoints"]
                 if endpoint.get("ip_address")]
    if not addresses:
        raise InputError(f"TPU {name} has no worker addresses (state {node['state']})",
                         hint="the TPU may be starting, stopped or preempted")
    return addresses if all_workers else addresses[:1]
