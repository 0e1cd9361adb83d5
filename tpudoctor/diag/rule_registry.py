"""The diag rule family: the built-in ``tpudoctor.diag.rules`` plus plugins of the shared ``tpudoctor`` entry-point
group (or its ``tpudoctor.diag_rules`` alias), through the one plugin registry (``tpudoctor.plugins``)."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from tpudoctor.diag.rule import DiagInput, DiagRule
from tpudoctor.findings import Finding
from tpudoctor.plugins import Family, Rules, evaluating_placeholder
from tpudoctor.profile.rule import RULE_ID_PATTERN
from tpudoctor.rule import evaluate_rule

ENTRY_POINT_GROUP = "tpudoctor.diag_rules"
BUILTIN_RULE_PACKAGE = "tpudoctor.diag.rules"



FAMILY = Family(judges="`tpudoctor diag`: the chips' measured health", name="diag-rules", what="diag rule",
                builtin=(BUILTIN_RULE_PACKAGE,), bases=(DiagRule,), alias_group=ENTRY_POINT_GROUP,
                id_pattern=RULE_ID_PATTERN, placeholder=evaluating_placeholder(DiagRule, "diag"))


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
               disabled: Collection[str] = ()) -> Rules:
    return FAMILY.load(extra_sources, plugins=plugins, disabled=disabled)


def evaluate_rules(subject: DiagInput, rules: Rules | None = None) -> list[Finding]:
    """The findings of every rule whose measurement the level took, worst first."""
    rules = load_rules() if rules is None else rules
    found = [evaluate_rule(cls, subject) for cls in rules.values() if cls().applies(subject)]
    return sorted(found, key=lambda f: (-f.status.rank, -f.severity.rank, f.id))
