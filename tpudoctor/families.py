"""The one family table: every kind of extension tpudoctor runs (checks and fact providers, and the rules of
profile, hang, hang reports, goodput, diag and memory), one ``Family`` row each, and the loaders.

A row names its bases as ``module:Class`` paths, imported when the family is loaded, so reading the table
imports no product. Built-ins and plugins are found the same way (``tpudoctor.plugins``): the shared
``tpudoctor`` entry-point group, each family's old group read as an alias. Checks are the one family with a
second base (fact providers) and a numbered placeholder, so they load through ``load_registry``; every other
family loads through ``load_rules(name)``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any, cast

from tpudoctor.check import CHECK_ID_PATTERN, Check
from tpudoctor.findings import CheckResult, FindingKind, Step
from tpudoctor.plugins import (
    Family,
    PluginProblem,
    RegistryError,
    Rules,
    plugin_problem_of,
    register_by_id,
)

__all__ = ["FAMILIES", "Registry", "RegistryError", "families", "load_registry", "load_rules"]

RULE_ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
"""Rule ids: lowercase words joined by '-' (``input-bound``); hang report rules take check-style ids."""
BUILTIN_CHECK_PACKAGE = "tpudoctor.checks"
BUILTIN_PROVIDER_PACKAGE = "tpudoctor.providers"

FAMILIES: dict[str, Family] = {family.name: family for family in (
    Family(name="checks", what="check", judges="`tpudoctor check`: the facts gathered once",
           builtin=(BUILTIN_CHECK_PACKAGE, BUILTIN_PROVIDER_PACKAGE),
           base_paths=("tpudoctor.check:Check", "tpudoctor.provider:FactProvider"), alias_group="tpudoctor.checks",
           id_pattern=CHECK_ID_PATTERN, id_example=" (like STEP-001)",
           conformance="tpudoctor.testing:conformance_problems"),
    Family(name="profile-rules", what="profile rule", judges="`tpudoctor profile analyze`: one host's profile figures",
           builtin=("tpudoctor.profile.rules",), base_paths=("tpudoctor.profile.rule:ProfileRule",),
           alias_group="tpudoctor.profile_rules", id_pattern=RULE_ID_PATTERN, placeholder="evaluating",
           conformance="tpudoctor.testing:profile_rule_conformance_problems"),
    Family(name="hang-rules", what="hang rule", judges="`tpudoctor hang`: where a thread stands",
           builtin=("tpudoctor.hang.rules",), base_paths=("tpudoctor.hang.rule:HangRule",),
           alias_group="tpudoctor.hang_rules", id_pattern=RULE_ID_PATTERN, placeholder="matching"),
    Family(name="hang-report-rules", what="hang report rule", judges="`tpudoctor hang`: the whole report (HANG-001..)",
           builtin=("tpudoctor.hang.report_rules",), base_paths=("tpudoctor.hang.report_rule:HangReportRule",),
           alias_group="tpudoctor.hang_report_rules", id_pattern=CHECK_ID_PATTERN,
           id_example=" (like a check id: ACME-001)", placeholder="evaluating-check-id"),
    Family(name="goodput-rules", what="goodput rule", judges="`tpudoctor goodput`: the run's goodput figures",
           builtin=("tpudoctor.goodput.rules",), base_paths=("tpudoctor.goodput.rule:GoodputRule",),
           alias_group="tpudoctor.goodput_rules", id_pattern=RULE_ID_PATTERN, placeholder="evaluating"),
    Family(name="diag-rules", what="diag rule", judges="`tpudoctor diag`: the chips' measured health",
           builtin=("tpudoctor.diag.rules",), base_paths=("tpudoctor.diag.rule:DiagRule",),
           alias_group="tpudoctor.diag_rules", id_pattern=RULE_ID_PATTERN, placeholder="evaluating"),
    Family(name="memory-rules", what="memory rule",
           judges="`tpudoctor memory`: one program's buffer plan at the memory peak",
           builtin=("tpudoctor.memory.rules",), base_paths=("tpudoctor.memory.fix_rule:MemoryRule",),
           alias_group="tpudoctor.memory_rules", id_pattern=RULE_ID_PATTERN, placeholder="evaluating"),
)}
"""Every family by name, in the reference's order."""


def families() -> list[Family]:
    """Every family, in the table's order."""
    return list(FAMILIES.values())


def load_rules(name: str, extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
               disabled: Collection[str] = ()) -> Rules:
    """Rule id -> class of the family ``name``, built-ins first, in id order within each source; ``disabled``
    names plugins to leave out (the run's ``disable_plugins`` setting)."""
    return FAMILIES[name].load(extra_sources, plugins=plugins, disabled=disabled)


@dataclasses.dataclass
class Registry:
    checks: Rules
    """Check id -> class (the one registry type every family has)."""
    providers: dict[str, Any]
    """Fact key -> the provider class (a ``tpudoctor.provider.FactProvider``) that fills it."""

    def check_classes(self) -> list[type[Check]]:
        return sorted(self.checks.values(), key=lambda c: (int(c.step), c.id))

    def provider_for(self, key: str) -> Any:
        return self.providers.get(key)

    def plugin_problem_checks(self) -> list[type[Check]]:
        """The checks that report a plugin that could not be loaded; a run shows them whatever it selects."""
        return [c for c in self.check_classes() if plugin_problem_of(c) is not None]


def _problem_check(problem: PluginProblem, number: int) -> type[Check]:
    class PluginProblemCheck(Check):
        __doc__ = f"The check plugin {problem.name} ({problem.source}) loads."
        id = f"PLUGIN-{number:03d}"
        title = f"check plugin {problem.name} loads"
        step = Step.NODE
        source = problem.source
        plugin_problem = problem

        def evaluate(self, facts) -> CheckResult:
            finding = problem.finding(self.id, FindingKind.CHECK)
            return dataclasses.replace(finding, step=self.step, title=self.title)

    PluginProblemCheck.__qualname__ = f"PluginProblemCheck[{problem.name}]"
    return PluginProblemCheck


def load_registry(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
                  disabled: Collection[str] = (),
                  builtin: Sequence[str] = (BUILTIN_CHECK_PACKAGE, BUILTIN_PROVIDER_PACKAGE)) -> Registry:
    """Every check and provider; ``disabled`` names plugins to leave out (the run's ``disable_plugins`` setting);
    ``builtin``: the built-in packages or modules to import (a merge needs only the slice checks)."""
    provider_base = FAMILIES["checks"].bases[1]  # FactProvider, imported here: the providers reach Google Cloud
    discovery = FAMILIES["checks"].discover(extra_sources, plugins=plugins, disabled=disabled, builtin=builtin)
    checks = Rules(FAMILIES["checks"], register_by_id(((source, by_base[Check]) for source, by_base in discovery.sources),
                                          id_pattern=CHECK_ID_PATTERN, what="check"))
    for number, problem in enumerate(discovery.problems, start=1):
        cls = _problem_check(problem, number)
        checks[cls.id] = cls
    providers: dict[str, Any] = {}
    for source, by_base in discovery.sources:
        for provider in cast("list[Any]", by_base[provider_base]):  # discovery sorts by base
            for key in provider.provides:
                other = providers.get(key)
                if other is not None and other is not provider:
                    raise RegistryError(
                        f"fact '{key}' is provided twice: by {other.__qualname__} and {provider.__qualname__} ({source})"
                    )
                if source != "builtin":
                    provider.source = source
                providers[key] = provider
    return Registry(checks=checks, providers=providers)
