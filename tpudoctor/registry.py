"""The check family: checks and fact providers, the built-in packages plus plugins of the shared ``tpudoctor``
entry-point group (and its old ``tpudoctor.checks`` group).

Discovery is ``tpudoctor.plugins``' (the one plugin registry): an entry point may name a module or
package, a single class, or a callable returning classes. Duplicate check ids or fact keys are an error
at load time; a plugin that cannot be loaded is a ``PLUGIN-nnn`` check that reports it as an ERROR.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Sequence
from typing import cast

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
from tpudoctor.provider import FactProvider

__all__ = ["Registry", "RegistryError", "load_registry"]

ENTRY_POINT_GROUP = "tpudoctor.checks"
"""The family's old entry-point group, still read (new plugins use the shared ``tpudoctor`` group)."""
BUILTIN_CHECK_PACKAGE = "tpudoctor.checks"
BUILTIN_PROVIDER_PACKAGE = "tpudoctor.providers"
FAMILY = Family(judges='`tpudoctor check`: the facts gathered once',
                name="checks", what="check", builtin=(BUILTIN_CHECK_PACKAGE, BUILTIN_PROVIDER_PACKAGE),
                bases=(Check, FactProvider), alias_group=ENTRY_POINT_GROUP, id_pattern=CHECK_ID_PATTERN,
                id_example=" (like STEP-001)", conformance="tpudoctor.testing:conformance_problems")


@dataclasses.dataclass
class Registry:
    checks: Rules
    """Check id -> class (the one registry type every family has)."""
    providers: dict[str, type[FactProvider]]
    """Fact key -> the provider class that fills it."""

    def check_classes(self) -> list[type[Check]]:
        return sorted(self.checks.values(), key=lambda c: (int(c.step), c.id))

    def provider_for(self, key: str) -> type[FactProvider] | None:
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
    discovery = FAMILY.discover(extra_sources, plugins=plugins, disabled=disabled, builtin=builtin)
    checks = Rules(FAMILY, register_by_id(((source, by_base[Check]) for source, by_base in discovery.sources),
                                          id_pattern=CHECK_ID_PATTERN, what="check"))
    for number, problem in enumerate(discovery.problems, start=1):
        cls = _problem_check(problem, number)
        checks[cls.id] = cls
    providers: dict[str, type[FactProvider]] = {}
    for source, by_base in discovery.sources:
        for provider in cast("list[type[FactProvider]]", by_base[FactProvider]):  # discovery sorts by base
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
