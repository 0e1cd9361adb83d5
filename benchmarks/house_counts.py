"""The house's shape in figures (issue 29's counts): families and their registries, rule bases, copies of
``evaluate_rule``, report classes, format dispatchers in the commands, exit-code rules, modules over 400 lines,
functions over 80 lines, README size; and issue 39's counts of ``reports/`` (files and lines, loops over
findings, renderer files per report kind). Prints one line each.

    python benchmarks/house_counts.py
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [p for folder in ("tpudoctor", "checks", "reports") for p in (ROOT / folder).rglob("*.py")]


REPORT_KINDS = ("check", "merged", "profile", "hang", "goodput", "diag", "memory", "bench", "compare")


def _loops_over_findings(tree: ast.AST) -> int:
    """``for`` statements and comprehensions over a collection of findings (``findings``, ``results``,
    ``ordered_results()``, ``doc["findings"]``), as issue 39's ``grep -E "for [^:]+ in [^:]*(findings|results)"``
    counts them, less its false hits (a loop over sections on a line that names findings after it)."""
    plural = re.compile(r"\b(findings|results|ordered_results)\b")
    return sum(1 for n in ast.walk(tree) if isinstance(n, (ast.For, ast.comprehension))
               and plural.search(ast.unparse(n.iter)))


def report_counts() -> dict[str, object]:
    files = sorted((ROOT / "reports").rglob("*.py"))
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in files}
    per_kind = {}
    for kind in REPORT_KINDS:
        stem = ("profile_compare", "goodput_compare", "compare") if kind == "compare" else (kind,)
        per_kind[kind] = sum(1 for p in files if p.stem.startswith(stem) and (kind == "compare"
                             or not p.stem.endswith("_compare")))
    return {"files": len(files), "lines": sum(len(p.read_text().splitlines()) for p in files),
            "loops": sum(_loops_over_findings(t) for t in trees.values()), "per_kind": per_kind}


def product_counts(trees: dict[Path, ast.AST]) -> dict[str, object]:
    """Issue 39 part 2: lines in ``commands/``, the longest command ``run``, family registry modules (a module
    that defines a ``FAMILY``) and rule example types (a class named ``Example`` or ending in ``Example``)."""
    commands = sorted((ROOT / "tpudoctor" / "commands").glob("*.py"))
    runs = sorted(((n.end_lineno - n.lineno + 1, p.stem) for p in commands
                   for n in ast.parse(p.read_text(encoding="utf-8")).body
                   if isinstance(n, ast.FunctionDef) and n.name == "run"), reverse=True)
    registries = sorted(p.relative_to(ROOT).as_posix() for p, t in trees.items()
                        if any(isinstance(n, ast.Assign) and any(getattr(x, "id", None) == "FAMILY" for x in n.targets)
                               for n in t.body))
    examples = sorted(f"{p.relative_to(ROOT).as_posix()}:{n.name}" for p, t in trees.items() for n in ast.walk(t)
                      if isinstance(n, ast.ClassDef) and n.name.endswith("Example"))  # old names kept as aliases
    return {"lines": sum(len(p.read_text().splitlines()) for p in commands), "runs": runs,
            "registries": registries, "examples": examples}


def main() -> None:
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in SOURCES}
    families = sum(1 for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.Call)
                   and getattr(n.func, "id", None) == "Family")
    rule_bases = sorted(n.name for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.ClassDef)
                        and any(isinstance(b, ast.Subscript) and getattr(b.value, "id", "") == "Rule" for b in n.bases))
    evaluate_rule = sum(1 for t in trees.values() for n in ast.walk(t)
                        if isinstance(n, ast.FunctionDef) and n.name == "evaluate_rule")
    reports = sorted(n.name for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.ClassDef)
                     and n.name.endswith("Report") and not n.name.startswith("_"))
    commands = [p for p in SOURCES if p.parent.name == "commands"]
    dispatch = sum(len(re.findall(r"\b(?:fmt|args\.format) == \"", p.read_text())) for p in commands)
    exit_rules = sum(1 for t in trees.values() for n in ast.walk(t)
                     if isinstance(n, ast.FunctionDef) and n.name == "exit_code_for")
    long_modules = sorted((len(p.read_text().splitlines()), p.relative_to(ROOT).as_posix()) for p in SOURCES
                          if len(p.read_text().splitlines()) > 400)
    long_functions = sorted((n.end_lineno - n.lineno + 1, f"{p.relative_to(ROOT).as_posix()}:{n.name}")
                            for p, t in trees.items() for n in ast.walk(t)
                            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno >= 80)
    text = (ROOT / "pyproject.toml").read_text()
    groups = sorted(set(re.findall(r'^\[project\.entry-points\.("?[\w.]+"?)\]', text, re.M)))
    print(f"families (Family rows, one registry type): {families}")
    print(f"entry-point groups declared: {len(groups)} {groups} (old per-family groups read as aliases)")
    print(f"rule bases on Rule[Input]: {len(rule_bases)} {rule_bases}")
    print(f"evaluate_rule definitions: {evaluate_rule}")
    print(f"report classes: {len(reports)} {reports}")
    print(f"format if/elif in commands: {dispatch}")
    print(f"exit-code rules: {exit_rules}")
    print(f"modules over 400 lines: {len(long_modules)} {long_modules}")
    print(f"functions over 80 lines: {len(long_functions)} {long_functions}")
    products = product_counts(trees)
    longest = (f"{products['runs'][0][0]} lines ({products['runs'][0][1]}.run)" if products["runs"]
               else "none (every command is a Product the one skeleton runs)")
    print(f"commands/: {products['lines']} lines; longest run: {longest}; runs over 30 lines: "
          f"{sum(1 for n, _ in products['runs'] if n > 30)}")
    print(f"family registry modules: {len(products['registries'])} {products['registries']}")
    print(f"Example types: {len(products['examples'])} {products['examples']}")
    counts = report_counts()
    print(f"reports/: {counts['files']} files, {counts['lines']} lines")
    print(f"loops over findings in reports/: {counts['loops']}")
    print(f"renderer files per report kind: {counts['per_kind']}")
    print(f"README: {len((ROOT / 'README.md').read_bytes()) / 1024:.1f} KB, "
          f"{len((ROOT / 'README.md').read_text().splitlines())} lines")


if __name__ == "__main__":
    main()
