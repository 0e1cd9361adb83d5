"""Flags shared by several commands, defined once."""

from __future__ import annotations

import argparse

from tpudoctor.formats import CHECK_FORMATS


def add_target_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("target (gcloud style; also CLOUDSDK_CORE_PROJECT, CLOUDSDK_COMPUTE_ZONE, TPU_NAME)")
    group.add_argument("--project", help="Google Cloud project id")
    group.add_argument("--zone", help="zone of the TPU, e.g. us-central2-b")
    group.add_argument("--tpu", help="TPU node name")
    group.add_argument("--worker", help="worker index on a multi-host node (default: this VM's, or all)")


def add_output_flags(parser: argparse.ArgumentParser, formats: tuple[str, ...] = CHECK_FORMATS) -> None:
    group = parser.add_argument_group("output")
    group.add_argument(
        "--format", choices=formats, default=None,
        help=f"report format (default: $TPUDOCTOR_FORMAT, the config file's format, or text); one of {', '.join(formats)}",
    )
    group.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    group.add_argument("-v", "--verbose", action="store_true", help="show evidence for every result")


def chosen_format(args: argparse.Namespace, formats: tuple[str, ...] = CHECK_FORMATS,
                  settings: dict | None = None) -> str:
    """--format, then $TPUDOCTOR_FORMAT, then the config file's ``format``, then text.

    A format this command does not have (``html`` from the config file for ``bench``) means text.
    """
    from tpudoctor import config

    wanted = str(config.resolve(args.format, "format", settings or {}, default="text")).strip().lower()
    return wanted if wanted in formats else "text"


def add_cluster_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", metavar="tcp://SCHEDULER:8786", default=None,
                        help="analyse the hosts on this Dask distributed cluster, whose workers read the captures "
                             "themselves (default: $TPUDOCTOR_CLUSTER, then `cluster` in tpudoctor.toml, else "
                             "local processes); needs pip install 'tpudoctor[dask]'")


def resolve_cluster(flag: str | None) -> str | None:
    """--cluster, then TPUDOCTOR_CLUSTER, then ``cluster`` in the config file; None runs locally."""
    from tpudoctor import config

    settings, _path = config.load_config_file()
    value = config.resolve(flag, "cluster", settings)
    if value is not None and not isinstance(value, str):
        from tpudoctor.errors import UsageError

        raise UsageError(f"config setting cluster must be a scheduler address string, got {value!r}",
                         hint='write it like cluster = "tcp://10.0.0.2:8786"')
    return value or None


def resolve_target(args: argparse.Namespace, settings: dict, keys: tuple[str, ...] = ("project", "zone", "tpu", "worker")):
    """The gcloud-style target from flags, environment and config file, every name valid (GCP's rules)
    before it reaches a command line or an API path; a usage error (exit 2) naming where a bad one came from."""
    from tpudoctor import config
    from tpudoctor.findings import Target
    from tpudoctor.resource_names import check_resource_name

    values = {}
    for key in keys:
        flag = getattr(args, key, None)
        value = config.resolve(flag, key, settings)
        if value is not None and not isinstance(value, str):
            value = str(value)
        values[key] = check_resource_name(key, value, origin=config.origin(flag, key))
    return Target(**values)
