"""``tpudoctor profile`` as a product: ``run`` reads a capture (a .xplane.pb, a run directory or a logdir, local
or gs://) into its ``ProfileReport``, or an op trace into its what-if report (``capture``: take one from a
running job, an ``Answer`` listing the files written)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from tpudoctor.errors import UsageError


@dataclasses.dataclass(frozen=True)
class ProfileOptions:
    run: str | None = None
    """The run folder of a logdir to read (None: the newest)."""
    cluster: str | None = None
    disabled_plugins: tuple[str, ...] = ()

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> ProfileOptions:
        return cls(run=args.run, cluster=settings.cluster, disabled_plugins=tuple(settings.disable_plugins or ()))


def run(inputs: Sequence[str], options: ProfileOptions, progress: Callable[[str], None] | None = None) -> Any:
    """The report of the one capture or op trace ``inputs`` names, with how long reading it took."""
    started = time.monotonic()
    (path,) = inputs
    (progress or (lambda message: None))(path)
    report = build_report(path, run=options.run, on_progress=progress, cluster=options.cluster,
                          disabled_plugins=options.disabled_plugins)
    report.duration_s = time.monotonic() - started
    return report


def build_report(path: str, *, run: str | None = None, on_progress=None, cluster: str | None = None,
                 disabled_plugins: tuple[str, ...] = ()):
    """The library pipeline's ``ProfileReport`` (data only); for an op trace (parquet), its what-if report
    (``profile.op_trace_report``)."""
    from tpudoctor.profile.op_trace import is_op_trace

    if is_op_trace(path):
        from tpudoctor.profile.op_trace_report import analyze_op_trace

        return analyze_op_trace(path)
    from tpudoctor.command_process import leave_out_pyarrow, one_blas_thread

    one_blas_thread()  # the analyses do no linear algebra
    if not cluster:  # an XSpace capture read here needs no pyarrow (a Dask client may serialize with it)
        leave_out_pyarrow()
    from tpudoctor.profile.pipeline import analyze

    return analyze(path, run=run, on_progress=on_progress, cluster=cluster, disabled_plugins=disabled_plugins)


@dataclasses.dataclass(frozen=True)
class CaptureOptions:
    request: Any
    """The ``profile.remote.CaptureRequest``."""

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> CaptureOptions:
        from tpudoctor import config
        from tpudoctor.profile.remote import CaptureRequest, service_addresses_for_tpu

        duration_s = config.parse_duration_s(args.duration)
        if duration_s <= 0:
            raise UsageError("--duration must be positive, e.g. 3s")
        if args.retries < 1:
            raise UsageError("--retries must be at least 1")
        target = settings.target()
        if args.service_addr:
            if args.all_workers:
                raise UsageError("--all-workers goes with --tpu; list several --service-addr HOST:PORT,HOST:PORT "
                                 "instead")
            addresses = [part.strip() for part in args.service_addr.split(",") if part.strip()]
        elif not target.tpu:
            raise UsageError("say where to capture from: --service-addr HOST:PORT or --tpu NAME",
                             hint="--tpu may also come from TPU_NAME or 'tpu' in tpudoctor.toml")
        else:
            addresses = service_addresses_for_tpu(target.tpu, project=target.project, zone=target.zone,
                                                  port=args.port, all_workers=args.all_workers)
        return cls(CaptureRequest(
            addresses=addresses, logdir=args.logdir, duration_ms=int(duration_s * 1000), attempts=args.retries,
            host_tracer_level=args.host_tracer_level, python_tracer_level=args.python_tracer_level,
            device_tracer_level=args.device_tracer_level))


def capture(inputs: Sequence[str], options: CaptureOptions, progress: Callable[[str], None] | None = None):
    """Capture into ``options.request.logdir``: an ``Answer`` listing the host files written."""
    from tpudoctor.answer import Answer
    from tpudoctor.profile.remote import capture as capture_profile

    request = options.request
    result = capture_profile(request, on_progress=progress or (lambda _message: None))
    return Answer({"files": list(result.files), "run": result.run}, "\n".join(result.files),
                  note=f"captured {len(result.files)} host file(s) into run {result.run} in {result.elapsed_s:.1f}s "
                       f"(attempt {result.attempt} of {request.attempts})\nnext: tpudoctor profile analyze "
                       f"{request.logdir}\n")
