"""The workers of a pod slice a fan-out reaches (``--all-workers``, ``--workers``): the usage errors every
fan-out shares (``check``, ``diag``, ``hang``), the worker count from the TPU API, and the ``FanOut`` to them."""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable

from tpudoctor.errors import InputError, UsageError


def discover_workers(target, session) -> list[str]:
    """Worker numbers from the node's network endpoints (one per worker), through the TPU API of the run's
    Google Cloud session."""
    from tpudoctor.gcp.errors import ApiCallFailed, user_error

    api = None
    try:
        api = session.tpu
        node = api.get_node(target.project, target.zone, target.tpu)
    except ApiCallFailed as exc:
        raise user_error(exc.failure, f"cannot read the TPU node {target.tpu} to count its workers",
                         identity=api.identity if api else None, project=target.project, zone=target.zone,
                         permission="tpu.nodes.get", alternative="pass --workers 0-N instead of --all-workers") from None
    count = len(node.get("network_endpoints") or [])
    if not count:
        raise InputError(f"the TPU node {target.tpu} lists no workers (state {node.get('state')})",
                         hint="the node may not be READY; see 'gcloud compute tpus tpu-vm describe'")
    return [str(i) for i in range(count)]


def slice_fan_out(args: argparse.Namespace, settings, *, command: str, refuse: Callable[[], None] | None = None,
                  longer_than: tuple[float, str] | None = None):
    """The ``FanOut`` to the workers the pod flags name on the slice the settings name, with the usage errors
    every fan-out shares. ``refuse`` raises the command's own (what cannot go to every worker);
    ``longer_than``: (seconds, what) the worker timeout must exceed."""
    from tpudoctor import config
    from tpudoctor.gcp.session import Session
    from tpudoctor.pod.fanout import FanOut, SshTarget
    from tpudoctor.pod.worker_ids import parse_worker_spec

    target = settings.target()
    if not target.tpu or not target.zone:
        raise UsageError("--all-workers and --workers need --tpu NAME and --zone ZONE",
                         hint=f"e.g. tpudoctor {command} --tpu my-pod --zone us-central2-b --all-workers")
    if args.all_workers and not target.project:
        raise UsageError("--all-workers needs --project to read the node's workers from the TPU API",
                         hint="pass --project PROJECT (or set CLOUDSDK_CORE_PROJECT), or list them: --workers 0-15")
    if refuse is not None:
        refuse()
    if args.parallel < 1:
        raise UsageError("--parallel must be at least 1")
    timeout_s = config.parse_duration_s(args.worker_timeout)
    if longer_than is None and timeout_s <= 0:
        raise UsageError("--worker-timeout must be positive")
    if longer_than is not None and timeout_s <= longer_than[0]:
        raise UsageError(f"--worker-timeout {args.worker_timeout} must be longer than {longer_than[1]}")
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise InputError("gcloud is not on PATH: the workers are reached through 'gcloud compute tpus tpu-vm ssh'",
                         hint="install the Google Cloud CLI: https://cloud.google.com/sdk/docs/install")
    workers = (parse_worker_spec(args.workers) if args.workers
               else discover_workers(target, Session(settings.endpoints, timeout_s=settings.api_timeout_s,
                                                     project=target.project)))
    ssh = SshTarget(tpu=target.tpu, zone=target.zone, project=target.project, internal_ip=args.internal_ip,
                    tunnel_through_iap=args.tunnel_through_iap, ssh_flags=tuple(args.ssh_flag), gcloud=gcloud)
    return FanOut(ssh, workers, timeout_s=timeout_s, parallel=args.parallel, name=target.tpu)
