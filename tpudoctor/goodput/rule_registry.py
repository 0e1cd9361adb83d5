"""The goodput rule family: the built-in ``tpudoctor.goodput.rules`` plus plugins of the shared ``tpudoctor``
entry-point group (and its old ``tpudoctor.goodput_rules`` group), through the one plugin registry
(``tpudoctor.plugins``), exactly as profile rules are found."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from tpudoctor.findings import Finding
from tpudoctor.goodput.rule import RULE_ID_PATTERN, GoodputRule
from tpudoctor.goodput.rules._common import skipped
from tpudoctor.plugins import Family, Rules, evaluating_placeholder
from tpudoctor.rule import evaluate_rule

ENTRY_POINT_GROUP = "tpudoctor.goodput_rules"
"""The family's old entry-point group, still read (new plugins use the shared ``tpudoctor`` group)."""
BUILTIN_RULE_PACKAGE = "tpudoctor.goodput.rules"
MEASURABLE_RULE_ID = "goodput-measurable"
"""The rule that judges whether the log supports the figures: the one rule still run when it does not."""



FAMILY = Family(judges="`tpudoctor goodput`: the run's goodput figures",
                name="goodput-rules", what="goodput rule", builtin=(BUILTIN_RULE_PACKAGE,), bases=(GoodputRule,),
                alias_group=ENTRY_POINT_GROUP, id_pattern=RULE_ID_PATTERN, placeholder=evaluating_placeholder(GoodputRule, "goodput"))


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
               disabled: Collection[str] = ()) -> Rules:
    """Rule id -> rule class; ``disabled`` names plugins to leave out (the run's ``disable_plugins`` setting)."""
    return FAMILY.load(extra_sources, plugins=plugins, disabled=disabled)


def evaluate_rules(document: Mapping[str, Any], rules: Mapping[str, type[GoodputRule]] | None = None
                   ) -> list[Finding]:
    """Every rule on the document's ``goodput`` figures: fired ones first (worst first), then passes."""
    rules = load_rules() if rules is None else rules
    goodput = document["goodput"]
    unsupported = (goodput.get("consistency") or {}).get("unsupported")
    findings = [skipped(cls, f"not judged: the log's times contradict each other ({unsupported})")
                if unsupported and cls.id != MEASURABLE_RULE_ID else evaluate_rule(cls, goodput)
                for cls in rules.values()]
    return sorted(findings, key=lambda f: (-f.status.rank, -f.severity.rank, f.id))
