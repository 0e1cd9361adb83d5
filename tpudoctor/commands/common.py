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


def add_output_flags(parser: argparse.ArgumentParser, formats: tuple[str, ...] = CHECK_FORMATS
                     ) -> argparse._ArgumentGroup:
    """``--format``, ``-o`` and ``-v``; the group, for the command's own output flags (``--redact``)."""
    group = parser.add_argument_group("output")
    group.add_argument(
        "--format", choices=formats, default=None,
        help=f"report format (default: $TPUDOCTOR_FORMAT, the config file's format, or text); one of {', '.join(formats)}",
    )
    group.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    group.add_argument("-v", "--verbose", action="store_true", help="show evidence for every result")
    return group


def add_redact_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--redact", action="store_true",
                        help="replace host names, IPs, bucket names, project ids and e-mails with placeholders "
                             "(<host-1>) before sharing the report")


def add_cluster_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", metavar="tcp://SCHEDULER:8786", default=None,
                        help="analyse the hosts on this Dask distributed cluster, whose workers read the captures "
                             "themselves (default: $TPUDOCTOR_CLUSTER, then `cluster` in tpudoctor.toml, else "
                             "local processes); needs pip install 'tpudoctor[dask]'")


def session_for(settings, *, timeout_s: float, project: str | None = None):
    """The run's Google Cloud session, at the endpoints the settings name."""
    from tpudoctor.gcp.session import Session

    return Session(settings.endpoints, timeout_s=timeout_s, project=project)


def add_plugin_flag(parser: argparse.ArgumentParser) -> None:
    """``--disable-plugin NAME``: the ``disable_plugins`` setting, for every command that loads plugins."""
    parser.add_argument("--disable-plugin", dest="disable_plugins", action="append", default=None, metavar="NAME",
                        help="leave out the plugin NAME (its entry-point name, its distribution, or DIST:NAME), e.g. "
                             "one that fails to load; repeatable or comma-separated (default: "
                             "$TPUDOCTOR_DISABLE_PLUGINS, then disable_plugins in tpudoctor.toml)")


def add_gate_flags(gate: argparse._ArgumentGroup, *, fail_on_help: str = "lowest status that exits 1 "
                   "(default: fail)") -> argparse._ArgumentGroup:
    """``--fail-on`` and ``--exit-zero`` in the command's "exit status" group: the run's ``Gate`` (the skeleton's),
    which sets the exit status and the JUnit failures alike."""
    gate.add_argument("--fail-on", choices=("warn", "fail"), default=None, help=fail_on_help)
    gate.add_argument("--exit-zero", action="store_true", help="always exit 0 unless tpudoctor itself breaks "
                                                               "(the JUnit then has no failures either)")
    return gate
