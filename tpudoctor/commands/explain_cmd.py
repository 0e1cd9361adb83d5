"""``tpudoctor explain ID``, ``tpudoctor list-signatures`` and ``tpudoctor list-checks``: what a log signature or a
check means, what it matches, how to fix it (``tpudoctor.explain``), for someone who has read a diagnosis."""

from __future__ import annotations

import argparse

from tpudoctor.commands.common import add_plugin_flag
from tpudoctor.formats import LIST_FORMATS
from tpudoctor.product import Product

EXPLAIN = Product("explain", "tpudoctor.explain", "CatalogOptions", LIST_FORMATS, inputs="signature_id",
                  entry="explain")
LIST_SIGNATURES = Product("list-signatures", "tpudoctor.explain", "CatalogOptions", LIST_FORMATS,
                          entry="list_signatures")
LIST_CHECKS = Product("list-checks", "tpudoctor.explain", "CatalogOptions", LIST_FORMATS, entry="list_checks")
SETTINGS = {"format": "text", "disable_plugins": None}


def register(sub: argparse._SubParsersAction) -> None:
    explain = sub.add_parser("explain", help="explain a log failure signature or a check (what it means, fixes)")
    explain.add_argument("signature_id", metavar="ID",
                         help="signature id or check id, as in a report (e.g. socket-closed, POD-004)")
    _listing(explain, EXPLAIN)
    signatures = sub.add_parser("list-signatures", help="list the log failure signatures tpudoctor knows")
    signatures.add_argument("--format", choices=LIST_FORMATS, default="text")
    signatures.set_defaults(handler=LIST_SIGNATURES, settings_spec={})  # no setting: no config file read


def register_list_checks(sub: argparse._SubParsersAction) -> None:
    _listing(sub.add_parser("list-checks", help="list the registered checks by triage step"), LIST_CHECKS)


def _listing(parser: argparse.ArgumentParser, product: Product) -> None:
    parser.add_argument("--format", choices=LIST_FORMATS, default=None,
                        help="text or json (default: $TPUDOCTOR_FORMAT, the config file's format, or text)")
    add_plugin_flag(parser)  # a check id is looked up in the registry, plugins included
    parser.set_defaults(handler=product, settings_spec=SETTINGS)
