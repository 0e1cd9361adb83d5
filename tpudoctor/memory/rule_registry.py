"""The memory fix rule family: the built-in ``tpudoctor.memory.rules`` plus plugins of the shared ``tpudoctor``
entry-point group (and its alias group ``tpudoctor.memory_rules``), through the one plugin registry
(``tpudoctor.plugins``), exactly as profile and goodput rules are found. ``rank_fixes`` runs every rule on one
program's plan and orders the fixes by expected saving."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from tpudoctor.findings import Finding, Status
from tpudoctor.memory.fix_rule import (
    CONFIDENCE_WEIGHT,
    FINDING_KIND,
    RULE_ID_PATTERN,
    MemoryPlanInput,
    MemoryRule,
)
from tpudoctor.plugins import Family, Rules, evaluating_placeholder
from tpudoctor.rule import evaluate_rule

ENTRY_POINT_GROUP = "tpudoctor.memory_rules"
"""The family's alias entry-point group (new plugins use the shared ``tpudoctor`` group)."""
BUILTIN_RULE_PACKAGE = "tpudoctor.memory.rules"



FAMILY = Family(judges="`tpudoctor memory`: one program's buffer plan at the memory peak",
                name="memory-rules", what="memory rule", builtin=(BUILTIN_RULE_PACKAGE,), bases=(MemoryRule,),
                alias_group=ENTRY_POINT_GROUP, id_pattern=RULE_ID_PATTERN, placeholder=evaluating_placeholder(MemoryRule, FINDING_KIND.value))


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
               disabled: Collection[str] = ()) -> Rules:
    """Rule id -> rule class; ``disabled`` names plugins to leave out (the run's ``disable_plugins`` setting)."""
    return FAMILY.load(extra_sources, plugins=plugins, disabled=disabled)


def _rank_key(finding: Finding, rules: Mapping[str, type[MemoryRule]]) -> tuple:
    evidence = finding.evidence
    expected = int(evidence.get("saving_bytes") or 0) * CONFIDENCE_WEIGHT.get(str(evidence.get("confidence")), 0.0)
    keeps = getattr(rules.get(finding.id), "keeps_numerics", True)
    return (-expected, not keeps, finding.id)


def evaluate_rules(subject: MemoryPlanInput, rules: Mapping[str, type[MemoryRule]] | None = None) -> list[Finding]:
    """Every rule on one program: the fixes that fired, best first (``rank_fixes``' order), then the rest (errors
    first, then passes by id)."""
    rules = load_rules(plugins=False) if rules is None else rules
    findings = [evaluate_rule(cls, subject) for cls in rules.values()]
    fired = [f for f in findings if f.status in (Status.WARN, Status.FAIL)]
    rest = [f for f in findings if f not in fired]
    return sorted(fired, key=lambda f: _rank_key(f, rules)) + sorted(rest, key=lambda f: (-f.status.rank, f.id))


def rank_fixes(subject: MemoryPlanInput, rules: Mapping[str, type[MemoryRule]] | None = None) -> list[Finding]:
    """The fixes that would save a worthwhile share of the peak, best first: by ``saving_bytes`` x the weight of
    its confidence (``CONFIDENCE_WEIGHT``), then fixes that keep the numerics before those that change them."""
    return [f for f in evaluate_rules(subject, rules) if f.status in (Status.WARN, Status.FAIL)]
