"""Finds profile rules: the built-in ``tpudoctor.profile.rules`` plus the ``tpudoctor.profile_rules``
entry points (a module or package, a rule class, or a callable returning rule classes), through the one
plugin registry (``tpudoctor.plugins``). Duplicate or malformed ids are an error at load time; a plugin
that cannot be loaded is a ``plugin-<name>`` rule whose finding is an ERROR naming it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from tpudoctor.profile.rule import RULE_ID_PATTERN, ProfileRule

ENTRY_POINT_GROUP = "tpudoctor.profile_rules"
BUILTIN_RULE_PACKAGE = "tpudoctor.profile.rules"


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
               disabled: Collection[str] = ()) -> dict[str, type[ProfileRule]]:
    """Rule id -> rule class, built-ins first, in id order within each source; ``disabled`` names plugins
    to leave out (the run's ``disable_plugins`` setting)."""
    from tpudoctor.plugins import load_rule_classes

    return load_rule_classes(builtin_package=BUILTIN_RULE_PACKAGE, group=ENTRY_POINT_GROUP, base=ProfileRule,
                             id_pattern=RULE_ID_PATTERN, what="profile rule", placeholder=_problem_rule,
                             extra_sources=extra_sources, plugins=plugins, disabled=disabled)


def _problem_rule(problem) -> type[ProfileRule]:
    from tpudoctor.findings import FindingKind
    from tpudoctor.plugins import placeholder_slug

    class PluginProblemRule(ProfileRule):
        __doc__ = f"The profile rule plugin {problem.name} ({problem.source}) loads."
        id = f"plugin-{placeholder_slug(problem.name)}"
        title = f"profile rule plugin {problem.name} loads"
        source = problem.source
        plugin_problem = problem

        def evaluate(self, host):
            return problem.finding(self.id, FindingKind.PROFILE)

    return PluginProblemRule
