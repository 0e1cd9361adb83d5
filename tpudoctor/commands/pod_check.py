"""The pod flags (``--all-workers``, ``--workers``: run the command on every worker of the slice through
``gcloud ssh`` and merge the reports), for every command that fans out (``check``, ``diag``, ``hang``); the
fan-out itself is ``tpudoctor.pod.slice_target``."""

from __future__ import annotations

import argparse

from tpudoctor.pod.slice_target import slice_fan_out  # noqa: F401 - where diag and hang find it

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

