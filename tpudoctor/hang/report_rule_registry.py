"""The hang report rule family (HANG-001..): the built-in ``tpudoctor.hang.report_rules`` plus plugins of the
shared ``tpudoctor`` entry-point group (or its ``tpudoctor.hang_report_rules`` alias), through the one plugin
registry (``tpudoctor.plugins``). A plugin that cannot be loaded is a rule whose finding is an ERROR naming it."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from tpudoctor.findings import Finding
from tpudoctor.hang.report import HangReport
from tpudoctor.hang.report_rule import RULE_ID_PATTERN, HangReportRule
from tpudoctor.plugins import Family, PluginProblem, Rules, evaluating_placeholder
from tpudoctor.rule import evaluate_rule

ENTRY_POINT_GROUP = "tpudoctor.hang_report_rules"
BUILTIN_RULE_PACKAGE = "tpudoctor.hang.report_rules"


def _check_style_id(problem: PluginProblem) -> str:
    return f"PLUGIN-{sum(map(ord, problem.source)) % 900 + 100:03d}"  # stable per plugin: a check-style id


FAMILY = Family(judges='`tpudoctor hang`: the whole report (HANG-001..)',
                name="hang-report-rules", what="hang report rule", builtin=(BUILTIN_RULE_PACKAGE,),
                bases=(HangReportRule,), alias_group=ENTRY_POINT_GROUP, id_pattern=RULE_ID_PATTERN,
                id_example=" (like a check id: ACME-001)",
                placeholder=evaluating_placeholder(HangReportRule, "hang", rule_id=_check_style_id))


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
               disabled: Collection[str] = ()) -> Rules:
    return FAMILY.load(extra_sources, plugins=plugins, disabled=disabled)


def evaluate_rules(report: HangReport, rules: Rules | None = None) -> list[Finding]:
    """The findings of every report rule that applies to ``report``, built-ins first in id order (HANG-001 first);
    a rule whose ``applies`` crashes is evaluated, so its crash shows as an ERROR finding."""
    rules = load_rules() if rules is None else rules
    return [evaluate_rule(cls, report) for cls in rules.values() if _applies(cls, report)]


def _applies(cls: type[HangReportRule], report: HangReport) -> bool:
    try:
        return bool(cls().applies(report))
    except Exception:  # noqa: BLE001 - evaluate_rule turns the rule's crash into its ERROR finding
        return True
