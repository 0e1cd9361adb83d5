"""``tpudoctor docs``: write the reference pages (``docs/reference/``) from the registries, or check that the
committed ones are current (``--check``: exit 1 naming the pages that differ).

Without ``--out`` the pages go to ``docs/reference`` only when run from tpudoctor's own checkout: in anyone
else's project that folder is theirs. A page tpudoctor did not write (no generated marker) is never replaced."""

from __future__ import annotations

import argparse
from pathlib import Path

from tpudoctor.exitcodes import ExitCode

CHECKOUT_OUT = "docs/reference"
"""Where the pages live in tpudoctor's own checkout."""


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
    parser.set_defaults(handler=run, settings_spec={})


def run(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor.errors import InputError
    from tpudoctor.reference import gather
    from tpudoctor.reference_markdown import GENERATED, render_pages

    out = _out_folder(args.out)
    pages = render_pages(gather(plugins=args.with_plugins))
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
    theirs = [out / name for name in sorted(pages) if _written_by_someone_else(out / name, GENERATED)]
    if theirs:
        raise InputError(f"--out {out}: {', '.join(str(p) for p in theirs)} "
                         f"{'is' if len(theirs) == 1 else 'are'} not a page tpudoctor wrote: not replaced",
                         hint="give another folder with --out, e.g. --out docs/tpudoctor-reference")
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(pages.items()):
            (out / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write {exc.filename or out}: {exc.strerror or exc}") from None
    print(f"wrote {len(pages)} pages to {out}")
    return ExitCode.OK


def _out_folder(given: str | None) -> Path:
    from tpudoctor.errors import UsageError

    if given is not None:
        if not given.strip():
            raise UsageError("--out '': give a folder for the pages", hint=f"e.g. --out {CHECKOUT_OUT}")
        return Path(given)
    if not _in_tpudoctor_checkout(Path.cwd()):
        raise UsageError("give --out DIR: this folder is not tpudoctor's checkout, and its docs/reference is "
                         "not tpudoctor's to write", hint="e.g. tpudoctor docs --out /tmp/tpudoctor-reference")
    return Path(CHECKOUT_OUT)


def _in_tpudoctor_checkout(folder: Path) -> bool:
    """The folder holds tpudoctor's own pyproject.toml (the project named tpudoctor)."""
    from tpudoctor.config import tomllib

    try:
        project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8")).get("project")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(project, dict) and project.get("name") == "tpudoctor"


def _written_by_someone_else(page: Path, marker: str) -> bool:
    """A page there that does not start with tpudoctor's generated marker (a link or a folder is not ours either)."""
    if not page.exists() and not page.is_symlink():
        return False
    if page.is_symlink() or not page.is_file():
        return True
    try:
        with page.open(encoding="utf-8", errors="replace") as handle:
            return not handle.readline().startswith(marker)
    except OSError:
        return True
