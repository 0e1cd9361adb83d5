"""Finds goodput rules: the built-in ``tpudoctor.goodput.rules`` plus the ``tpudoctor.goodput_rules`` entry
points, exactly as profile rules are found."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tpudoctor.findings import Finding
from tpudoctor.goodput.rule import RULE_ID_PATTERN, GoodputRule, evaluate_rule
from tpudoctor.plugins import load_plugin_classes

ENTRY_POINT_GROUP = "tpudoctor.goodput_rules"
BUILTIN_RULE_PACKAGE = "tpudoctor.goodput.rules"


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True
               ) -> dict[str, type[GoodputRule]]:
    return load_plugin_classes(builtin_package=BUILTIN_RULE_PACKAGE, group=ENTRY_POINT_GROUP, base=GoodputRule,
                               id_pattern=RULE_ID_PATTERN, what="goodput rule", extra_sources=extra_sources,
                               plugins=plugins)


def evaluate_rules(document: Mapping[str, Any], rules: Mapping[str, type[GoodputRule]] | None = None
                   ) -> list[Finding]:
    """Every rule on the document's ``goodput`` figures: fired ones first (worst first), then passes."""
    rules = load_rules() if rules is None else rules
    findings = [evaluate_rule(cls, document["goodput"]) for cls in rules.values()]
    return sorted(findings, key=lambda f: (-f.status.rank, -f.severity.rank, f.id))
