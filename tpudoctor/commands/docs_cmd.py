"""``tpudoctor docs``: write the reference pages from the registries, or check that the committed ones are current
(``--check``: exit 1 naming the pages that differ); the product is ``tpudoctor.reference_pages``."""

from __future__ import annotations

import argparse

from tpudoctor.product import Product
from tpudoctor.reference_pages import CHECKOUT_OUT

PRODUCT = Product("docs", "tpudoctor.reference_pages", "PagesOptions")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "docs", help="write the reference pages (checks, signatures, rules, exit codes, formats) from the registries",
        description="Write the reference pages (checks, log signatures, rules, exit codes, report formats) as "
                    "Markdown, generated from the registries, or check that written ones are current (--check). "
                    f"Run in tpudoctor's own checkout, they go to {CHECKOUT_OUT}; elsewhere give --out. A page "
                    "that tpudoctor did not write is never replaced.")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help=f"folder to write the pages into (default: {CHECKOUT_OUT} when run in tpudoctor's own "
                             "checkout; elsewhere required)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a page in --out differs from what the registries give")
    parser.add_argument("--with-plugins", action="store_true",
                        help="also document the checks and rules of installed plugins")
    parser.set_defaults(handler=PRODUCT, settings_spec={})
