"""``tpudoctor check --tpu NAME --all-workers`` (or ``--workers 0,3-5``): the check on every worker, one report.

Kept apart from ``check_cmd`` so the single-worker path stays as it was; ``check_cmd`` hands over here when
either flag is given.
"""

from __future__ import annotations

import argparse
import shlex
import shutil

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


def remote_command(args: argparse.Namespace, settings, *, worker: str, timeout_s: float) -> str:
    """The ``tpudoctor check`` each worker runs: our settings as resolved here (``settings.to_argv``: the worker
    has neither our config file nor our environment), its own number and limit, the user's selection, JSON on
    stdout."""
    from tpudoctor.settings import to_argv

    mine = settings.replace(format="json", timeout_s=max(1.0, timeout_s), worker=worker)
    argv = ["tpudoctor", "check", *to_argv(mine), "--exit-zero"]
    for step in args.step or ():
        argv += ["--step", str(step)]
    for flag, given in (("--probe", args.probe), ("--write-probe", args.write_probe), ("--redact", args.redact)):
        if given:
            argv.append(flag)
    if args.step is None or 5 in args.step:
        argv.append(f"--reference-model={args.reference_model}")
    return shlex.join(argv + list(args.ids))


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


def run_fanout(args: argparse.Namespace, settings, *, fmt: str, fail_on: str) -> ExitCode:
    from tpudoctor import config
    from tpudoctor.commands.common import session_for
    from tpudoctor.documents import merged_document
    from tpudoctor.findings import exit_code_for
    from tpudoctor.output import write_text
    from tpudoctor.pod.fanout import SshTarget, outcome_of, run_workers
    from tpudoctor.pod.merge import merge_outcomes, slice_registry
    from tpudoctor.pod.worker_ids import parse_worker_spec
    from tpudoctor.progress import progress
    from tpudoctor.reports.merged import render_merged_document

    target = settings.target()
    if not target.tpu or not target.zone:
        raise UsageError("--all-workers and --workers need --tpu NAME and --zone ZONE",
                         hint="e.g. tpudoctor check --tpu my-pod --zone us-central2-b --all-workers")
    if args.all_workers and not target.project:
        raise UsageError("--all-workers needs --project to read the node's workers from the TPU API",
                         hint="pass --project PROJECT (or set CLOUDSDK_CORE_PROJECT), or list them: --workers 0-15")
    if "-" in (args.log_file or []):
        raise UsageError("--log-file - (stdin) cannot go to every worker", hint="give a path on the workers")
    from tpudoctor.pod.report_store import has_placeholder

    if has_placeholder(args.output) or (args.output or "").startswith("gs://"):
        raise UsageError(f"-o {args.output}: the fan-out writes one merged report to a local file or stdout",
                         hint="the per-worker reports are inside the merged JSON (--format json), under 'workers'")
    if args.parallel < 1:
        raise UsageError("--parallel must be at least 1")
    timeout_s = config.parse_duration_s(args.worker_timeout)
    if timeout_s <= 0:
        raise UsageError("--worker-timeout must be positive")
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        raise InputError("gcloud is not on PATH: the workers are reached through 'gcloud compute tpus tpu-vm ssh'",
                         hint="install the Google Cloud CLI: https://cloud.google.com/sdk/docs/install")
    workers = (parse_worker_spec(args.workers) if args.workers
               else discover_workers(target, session_for(settings, timeout_s=settings.api_timeout_s,
                                                         project=target.project)))
    ssh = SshTarget(tpu=target.tpu, zone=target.zone, project=target.project, internal_ip=args.internal_ip,
                    tunnel_through_iap=args.tunnel_through_iap, ssh_flags=tuple(args.ssh_flag), gcloud=gcloud)
    # The worker's own limit ends before ours so that a slow worker still sends what it has.
    inner_s = timeout_s - min(10.0, timeout_s * 0.25)
    with progress(f"tpudoctor check on {len(workers)} workers of {target.tpu}") as update:
        runs = run_workers(workers, lambda w: ssh.argv(w, remote_command(args, settings, worker=w,
                                                                          timeout_s=inner_s)),
                           timeout_s=timeout_s, parallel=args.parallel, progress=update)
    outcomes = [outcome_of(run, ssh, timeout_s=timeout_s) for run in runs.values()]
    merged = merge_outcomes(outcomes, expected=workers, target=target,
                            source=f"gcloud compute tpus tpu-vm ssh {target.tpu} --worker=N",
                            registry=slice_registry(settings.disable_plugins))
    text = render_merged_document(merged_document(merged, redact=args.redact), fmt, verbose=args.verbose,
                                  color=_color_wanted(args))
    write_text(args.output, text)
    return exit_code_for(merged.report, fail_on=fail_on, exit_zero=args.exit_zero)


def _color_wanted(args: argparse.Namespace) -> bool:
    import sys

    return args.output in (None, "-") and sys.stdout.isatty()
