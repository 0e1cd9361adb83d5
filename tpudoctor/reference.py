"""The reference, gathered from the registries themselves: every check, log signature, benign line, cause family,
step-line form, profile rule, hang rule and goodput rule, the exit codes and the output formats, as plain data
that ``tpudoctor.reference_markdown`` formats into ``docs/reference/`` (``tpudoctor docs``). What is registered is
what is documented: a test fails when a registered id has no entry.
"""

from __future__ import annotations

import inspect
from typing import Any


def _doc(cls: type) -> str:
    return inspect.cleandoc(cls.__doc__ or "").strip()


def gather(*, plugins: bool = False) -> dict[str, Any]:
    """The reference as data; ``plugins``: also third parties' checks and rules installed here."""
    from tpudoctor.exitcodes import ExitCode
    from tpudoctor.families import families as rule_families
    from tpudoctor.families import load_registry
    from tpudoctor.logdiag.benign import load_benign
    from tpudoctor.logdiag.catalog import load_catalog
    from tpudoctor.logdiag.parsers import load_cause_families
    from tpudoctor.logs.steps import load_forms
    from tpudoctor.plugins import ENTRY_POINT_GROUP

    registry = load_registry(plugins=plugins)
    checks = [{"id": c.id, "step": int(c.step), "step_label": c.step.label, "title": c.title, "doc": _doc(c),
               "requires": list(c.requires), "facts": list(c.facts), "docs": c.docs, "source": c.source,
               "runs_on": c.runs_on} for c in registry.check_classes()]
    signatures = [{"id": s.id, "title": s.title, "layer": s.layer, "fatal": s.fatal, "severity": s.severity.value,
                   "cause": s.cause, "fix": s.remediation.text, "commands": list(s.remediation.commands),
                   "docs": s.remediation.docs_url, "source": s.source, "fallback": s.fallback}
                  for s in load_catalog().signatures]
    benign = [{"id": b.id, "pattern": b.pattern.pattern, "why": b.why, "source": b.source} for b in load_benign()]
    families = [{"id": f.id, "label": f.label, "words": f.words.pattern, "check": f.check}
                for f in load_cause_families()]
    forms = [{"framework": f.framework, "kind": f.kind, "keyword": f.keyword, "pattern": f.regex.pattern,
              "example": f.examples[0]} for f in load_forms()]

    def rules(loaded: dict[str, type]) -> list[dict[str, Any]]:
        return [{"id": rid, "title": getattr(cls, "title", "") or "", "doc": _doc(cls),
                 "docs": getattr(cls, "docs", "") or "", "source": getattr(cls, "source", "builtin"),
                 "examples": len(getattr(cls, "examples", ()) or ())}
                for rid, cls in sorted(loaded.items())]

    from tpudoctor.formats import COMMAND_FORMATS

    return {
        "checks": checks,
        "signatures": signatures,
        "benign_lines": benign,
        "cause_families": families,
        "step_forms": forms,
        "entry_point_group": ENTRY_POINT_GROUP,
        "rule_families": [{"name": f.name, "what": f.what, "judges": f.judges, "alias_group": f.alias_group,
                           "rules": rules(f.load(plugins=plugins))} for f in rule_families() if f.name != "checks"],
        "exit_codes": [{"code": int(c), "name": c.name, "meaning": _exit_doc(c)} for c in ExitCode],
        "formats": {command: list(names) for command, names in COMMAND_FORMATS.items()},
    }


def _exit_doc(code: Any) -> str:
    import ast
    from pathlib import Path

    from tpudoctor import exitcodes

    tree = ast.parse(Path(exitcodes.__file__).read_text(encoding="utf-8"))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ExitCode").body
    for i, node in enumerate(body):
        if isinstance(node, ast.Assign) and node.targets[0].id == code.name and i + 1 < len(body):  # type: ignore[attr-defined]
            doc = body[i + 1]
            if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant):
                return str(doc.value.value)
    return ""
