"""``tpudoctor docs`` as a product: write the reference pages (``docs/reference/``) that the registries give
(``tpudoctor.reference``), or check that the committed ones are current (``check``: a FAIL for each page that
differs, so exit 1 naming them).

Without ``out`` the pages go to ``docs/reference`` only when run from tpudoctor's own checkout: in anyone
else's project that folder is theirs. A page tpudoctor did not write (no generated marker) is never replaced."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tpudoctor.answer import Answer
from tpudoctor.errors import InputError

CHECKOUT_OUT = "docs/reference"
"""Where the pages live in tpudoctor's own checkout."""


@dataclasses.dataclass(frozen=True)
class PagesOptions:
    out: Path
    check: bool = False
    """Write nothing; a FAIL for each page in ``out`` that differs from what the registries give."""
    with_plugins: bool = False

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> PagesOptions:
        return cls(out=_out_folder(args.out), check=args.check, with_plugins=args.with_plugins)


def run(inputs: Sequence[str], options: PagesOptions, progress: Callable[[str], None] | None = None) -> Answer:
    from tpudoctor.findings import Finding, Status
    from tpudoctor.reference import gather
    from tpudoctor.reference_markdown import GENERATED, render_pages

    out = options.out
    pages = render_pages(gather(plugins=options.with_plugins))
    if options.check:
        stale = [name for name, text in sorted(pages.items())
                 if not (out / name).is_file() or (out / name).read_text(encoding="utf-8") != text]
        extra = sorted(p.name for p in out.glob("*.md") if p.name not in pages) if out.is_dir() else []
        lines = ([f"{out / name}: out of date (regenerate: tpudoctor docs --out {out})" for name in stale]
                 + [f"{out / name}: no registry makes this page (remove it)" for name in extra])
        return Answer({"stale": stale, "extra": extra}, "\n".join(lines),
                      results=[Finding(id="DOCS", step=None, title="reference page", status=Status.FAIL, message=line)
                               for line in lines])
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
    return Answer({"written": sorted(pages), "out": str(out)}, f"wrote {len(pages)} pages to {out}")


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
