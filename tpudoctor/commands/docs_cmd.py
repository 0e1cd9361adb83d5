"""``tpudoctor docs``: write the reference pages (``docs/reference/``) from the registries, or check that the
committed ones are current (``--check``: exit 1 naming the pages that differ)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tpudoctor.exitcodes import ExitCode

DEFAULT_OUT = "docs/reference"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("docs", help="write the reference pages (checks, signatures, rules, exit codes, "
                                         "formats) from the registries")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help=f"folder to write the pages into (default: {DEFAULT_OUT})")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a page in --out differs from what the registries give")
    parser.add_argument("--with-plugins", action="store_true",
                        help="also document the checks and rules of installed plugins")
    parser.set_defaults(handler=run, settings_spec={})


def run(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor.errors import InputError
    from tpudoctor.reference import gather
    from tpudoctor.reports.reference_markdown import render_pages

    pages = render_pages(gather(plugins=args.with_plugins))
    out = Path(args.out)
    if args.check:
        stale = [name for name, text in sorted(pages.items())
                 if not (out / name).is_file() or (out / name).read_text(encoding="utf-8") != text]
        extra = sorted(p.name for p in out.glob("*.md") if p.name not in pages) if out.is_dir() else []
        for name in stale:
            print(f"{out / name}: out of date (regenerate: tpudoctor docs --out {out})")
        for name in extra:
            print(f"{out / name}: no registry makes this page (remove it)")
        return ExitCode.FINDINGS if stale or extra else ExitCode.OK
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: not a folder")
    out.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(pages.items()):
        (out / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(pages)} pages to {out}")
    return ExitCode.OK
