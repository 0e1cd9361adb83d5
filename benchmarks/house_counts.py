"""The house's shape in figures (issue 29's counts): families and their registries, rule bases, copies of
``evaluate_rule``, report classes, format dispatchers in the commands, exit-code rules, modules over 400 lines,
functions over 80 lines, README size. Prints one line each.

    python benchmarks/house_counts.py
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [p for folder in ("tpudoctor", "checks", "reports") for p in (ROOT / folder).rglob("*.py")]


def main() -> None:
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in SOURCES}
    families = sum(1 for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.Assign)
                   and any(getattr(x, "id", None) == "FAMILY" for x in n.targets))
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
    print(f"families (one Family each, one registry type): {families}")
    print(f"entry-point groups declared: {len(groups)} {groups} (old per-family groups read as aliases)")
    print(f"rule bases on Rule[Input]: {len(rule_bases)} {rule_bases}")
    print(f"evaluate_rule definitions: {evaluate_rule}")
    print(f"report classes: {len(reports)} {reports}")
    print(f"format if/elif in commands: {dispatch}")
    print(f"exit-code rules: {exit_rules}")
    print(f"modules over 400 lines: {len(long_modules)} {long_modules}")
    print(f"functions over 80 lines: {len(long_functions)} {long_functions}")
    print(f"README: {len((ROOT / 'README.md').read_bytes()) / 1024:.1f} KB, "
          f"{len((ROOT / 'README.md').read_text().splitlines())} lines")


if __name__ == "__main__":
    main()
