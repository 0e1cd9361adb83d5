"""The report's own findings: those of the hang report rules (HANG-001.., ``tpudoctor.hang.report_rules``), then
the workers' problems, then an ERROR for each hang rule plugin that could not be loaded."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from tpudoctor.findings import Finding, FindingKind
from tpudoctor.hang.report import HangReport
from tpudoctor.hang.rule import HangRule


def findings(report: HangReport, worker_problems: list[Finding], *, disabled_plugins: Collection[str] = ()
             ) -> list[Finding]:
    """``report.captures`` must be set: the report rules read them."""
    from tpudoctor.families import load_rules
    from tpudoctor.hang.report_rule import evaluate_rules

    return evaluate_rules(report, load_rules("hang-report-rules", disabled=disabled_plugins)) + worker_problems


def plugin_problem_findings(rules: Iterable[type[HangRule]]) -> list[Finding]:
    """An ERROR finding for each hang rule plugin that could not be loaded, naming it."""
    from tpudoctor.plugins import plugin_problem_of

    return [problem.finding(rule.id, FindingKind.HANG) for rule in rules
            if (problem := plugin_problem_of(rule)) is not None]
