"""``tpudoctor check --tpu NAME --all-workers`` (or ``--workers 0,3-5``): the check on every worker, one report.

Kept apart from ``check_cmd`` so the single-worker path stays as it was; ``check_cmd`` hands over here when
either flag is given. The pod flags and ``slice_fan_out`` (the ``tpudoctor.pod.FanOut`` they name) serve every
command that fans out (``hang`` too).
"""

from __future__ import annotations

import argparse
import shlex
import shutil
from collections.abc import Callable

from tpudoctor.errors import InputError, UsageError
from tpudoctor.exitcodes import ExitCode

DEFAULT_PARALLEL = 64  # gcloud's own --worker=all contacts every worker at once


def add_pod_flags(parser: argparse.ArgumentParser, what: str = "the check") -> None:
    pod = parser.add_argument_group(f"pod slices (run {what} on every worker through gcloud ssh, merge the reports)")
    which = pod.add_mutually_exclusive_group()
    which.add_argument("--all-workers", action="store_true",
                       help="every worker of --tpu (the count comes from the TPU API)")
    which.add_argument("--workers", metavar="LIST", help="these workers only, e.g. 0,3-5")
    pod.add_argument("--worker-timeout", default="300s", metavar="DURATION",
                     help="limit for each worker's answer; a worker past it is reported as hung (default 300s)")
    pod.add_argument("--parallel", type=int, default=DEFAULT_PARALLEL, metavar="N",
                     help=f"workers contacted at once (default {DEFAULT_PARALLEL})")
    pod.add_argument("--internal-ip", action="store_true", help="passed to gcloud ssh: connect to internal IPs")
    pod.add_argument("--tunnel-through-iap", action="store_true", help="passed to gcloud ssh: tunnel through IAP")
    pod.add_argument("--ssh-flag", action="append", default=[], metavar="FLAG",
                     help="passed to gcloud ssh as --ssh-flag=FLAG; repeatable")


def wants_fanout(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "all_workers", False) or getattr(args, "workers", None))


WORKER_FLAGS = ("--step", "--probe", "--write-probe", "--redact")
"""``check``'s own flags (not settings) that each worker takes as they were given here."""


def worker_argv(args: argparse.Namespace, settings, *, worker: str, timeout_s: float) -> list[str]:
    """The ``tpudoctor check`` each worker runs: our settings as resolved here (``Settings.worker_argv``: the worker
    has neither our config file nor our environment), its own number and limit, the user's selection, JSON on
    stdout."""
    flags = WORKER_FLAGS + (("--reference-model",) if args.step is None or 5 in args.step else ())
    # --exit-zero always: a worker's findings travel in its report, and its exit status tells only how it ran
    return settings.worker_argv("check", args=dict(vars(args), exit_zero=True), flags=(*flags, "--exit-zero"),
                                positional=list(args.ids), format="json", timeout_s=max(1.0, timeout_s),
                                worker=worker)


def remote_command(args: argparse.Namespace, settings, *, worker: str, timeout_s: float) -> str:
    """``worker_argv`` as the worker's shell reads it."""
    return shlex.join(worker_argv(args, settings, worker=worker, timeout_s=timeout_s))


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
    from tpudoctor.commands.common import session_for
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
               else discover_workers(target, session_for(settings, timeout_s=settings.api_timeout_s,
                                                         project=target.project)))
    ssh = SshTarget(tpu=target.tpu, zone=target.zone, project=target.project, internal_ip=args.internal_ip,
                    tunnel_through_iap=args.tunnel_through_iap, ssh_flags=tuple(args.ssh_flag), gcloud=gcloud)
    return FanOut(ssh, workers, timeout_s=timeout_s, parallel=args.parallel, name=target.tpu)


def run_fanout(args: argparse.Namespace, settings, *, fmt: str, fail_on: str) -> ExitCode:
    from tpudoctor.documents import merged_document
    from tpudoctor.findings import exit_code_for
    from tpudoctor.output import write_text
    from tpudoctor.pod.documents import report_from_document
    from tpudoctor.pod.fanout import WorkerCommand
    from tpudoctor.pod.merge import merge_outcomes, slice_registry
    from tpudoctor.rendering import render

    fan = slice_fan_out(args, settings, command="check", refuse=lambda: _refuse(args))
    check = WorkerCommand("check", lambda w: worker_argv(args, settings, worker=w, timeout_s=fan.worker_limit_s),
                          kind="check", what="check report", read=report_from_document)
    merged = fan.run(check, lambda outcomes: merge_outcomes(
        outcomes, expected=fan.workers, target=settings.target(), source=fan.via,
        registry=slice_registry(settings.disable_plugins)))
    from tpudoctor.findings import Gate

    text = render(merged_document(merged, redact=args.redact), fmt, verbose=args.verbose,
                                  color=_color_wanted(args), gate=Gate(fail_on, args.exit_zero))
    write_text(args.output, text, fmt=fmt)
    return exit_code_for(merged.report, fail_on=fail_on, exit_zero=args.exit_zero)


def _refuse(args: argparse.Namespace) -> None:
    """What ``check`` cannot send to every worker."""
    from tpudoctor.pod.report_store import has_placeholder

    if "-" in (args.log_file or []):
        raise UsageError("--log-file - (stdin) cannot go to every worker", hint="give a path on the workers")
    if has_placeholder(args.output) or (args.output or "").startswith("gs://"):
        raise UsageError(f"-o {args.output}: the fan-out writes one merged report to a local file or stdout",
                         hint="the per-worker reports are inside the merged JSON (--format json), under 'workers'")


def _color_wanted(args: argparse.Namespace) -> bool:
    import sys

    return args.output in (None, "-") and sys.stdout.isatty()
