"""The reference pages in docs/reference/ are what the registries give today (``tpudoctor docs --check``), and
every registered check, signature, step form, cause family and rule has its entry; the README stays short."""

from __future__ import annotations

import pytest
from paths import REPO as ROOT

from tpudoctor.cli import main
from tpudoctor.reports import escape

REFERENCE = ROOT / "docs" / "reference"


def test_the_committed_reference_is_what_the_registries_give(capsys):
    assert main(["docs", "--check", "--out", str(REFERENCE)]) == 0, capsys.readouterr().out


def test_a_stale_or_stray_page_fails_the_check(tmp_path, capsys):
    assert main(["docs", "--out", str(tmp_path)]) == 0
    (tmp_path / "rules.md").write_text("old\n")
    (tmp_path / "notes.md").write_text("mine\n")
    assert main(["docs", "--check", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "rules.md: out of date" in out and "notes.md: no registry makes this page" in out


def test_every_registered_id_has_its_entry():
    from tpudoctor.families import families, load_registry
    from tpudoctor.logdiag.catalog import load_catalog
    from tpudoctor.logdiag.parsers import load_cause_families
    from tpudoctor.logs.steps import load_forms

    pages = {p.name: p.read_text(encoding="utf-8") for p in REFERENCE.glob("*.md")}
    expected = {
        "checks.md": [c.id for c in load_registry(plugins=False).check_classes()],
        "signatures.md": [s.id for s in load_catalog().signatures] + [f.id for f in load_cause_families()],
        "rules.md": [rule_id for f in families() if f.name != "checks" for rule_id in f.load(plugins=False)],
    }
    missing = [f"{page}: {ident}" for page, ids in expected.items() for ident in ids if f"`{ident}`" not in pages[page]]
    missing += [f"log-forms.md: {f.keyword}" for f in load_forms()
                if escape.markdown_code(f.keyword, in_table=True) not in pages["log-forms.md"]]
    assert missing == []
    assert len(expected["rules.md"]) >= 30 and len(expected["checks.md"]) >= 35


def test_the_readme_is_short_and_links_every_guide_and_reference_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 12 * 1024
    for folder in ("guide", "reference"):
        for page in (ROOT / "docs" / folder).glob("*.md"):
            if page.name != "index.md":
                assert f"docs/{folder}/{page.name}" in readme, page.name
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci in readme, "the README's test command is the one CI runs"


# ---- the hostile probe of 2026-12-04 (N16, N22, N29): where docs writes, and what it never replaces


@pytest.mark.parametrize("out", ["/sys/kernel", "FILE/sub", "/proc/self"])
def test_a_folder_that_cannot_take_the_pages_is_a_usage_error(out, tmp_path, capsys):
    if out.startswith("FILE"):
        (tmp_path / "afile").write_text("x\n")
        out = str(tmp_path / "afile" / "sub")
    assert main(["docs", "--out", out]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_a_users_own_page_is_never_replaced_and_the_default_is_only_tpudoctors_checkout(tmp_path, monkeypatch,
                                                                                          capsys):
    mine = tmp_path / "userproj" / "docs" / "reference" / "index.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine\n")
    monkeypatch.chdir(tmp_path / "userproj")
    assert main(["docs"]) == 2
    assert "give --out DIR" in capsys.readouterr().err
    assert main(["docs", "--out", "docs/reference"]) == 2
    assert "index.md is not a page tpudoctor wrote: not replaced" in capsys.readouterr().err
    assert mine.read_text() == "mine\n" and sorted(p.name for p in mine.parent.iterdir()) == ["index.md"]
    assert main(["docs", "--out", ""]) == 2
    assert list((tmp_path / "userproj").glob("*.md")) == []
    assert main(["docs", "--out", "generated"]) == 0 and main(["docs", "--out", "generated"]) == 0  # its own pages
    monkeypatch.chdir(ROOT)
    assert main(["docs", "--check"]) == 0  # in tpudoctor's checkout the default is its docs/reference


def test_docs_help_describes_the_command(capsys):
    with pytest.raises(SystemExit):
        main(["docs", "--help"])
    assert "Write the reference pages" in capsys.readouterr().out


def test_exit_codes_page_renders_code_spans_once():
    page = (REFERENCE / "exit-codes.md").read_text(encoding="utf-8")
    assert "\\`" not in page and "`--fail-on`" in page
