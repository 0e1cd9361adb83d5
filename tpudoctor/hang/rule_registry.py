"""Finds hang rules: the built-in ``tpudoctor.hang.rules`` plus the ``tpudoctor.hang_rules`` entry points,
through the one plugin registry (``tpudoctor.plugins``). A plugin that cannot be loaded is a rule that never
matches and carries the problem; ``analyze`` shows it as an ERROR finding naming the plugin."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from tpudoctor.hang.rule import RULE_ID_PATTERN, HangRule

ENTRY_POINT_GROUP = "tpudoctor.hang_rules"
BUILTIN_RULE_PACKAGE = "tpudoctor.hang.rules"


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
               disabled: Collection[str] = ()) -> dict[str, type[HangRule]]:
    """Rule id -> rule class; ``disabled`` names plugins to leave out (the run's ``disable_plugins`` setting)."""
    from tpudoctor.plugins import load_rule_classes

    return load_rule_classes(builtin_package=BUILTIN_RULE_PACKAGE, group=ENTRY_POINT_GROUP, base=HangRule,
                             id_pattern=RULE_ID_PATTERN, what="hang rule", placeholder=_problem_rule,
                             extra_sources=extra_sources, plugins=plugins, disabled=disabled)


def _problem_rule(problem) -> type[HangRule]:
    from tpudoctor.plugins import placeholder_slug

    class PluginProblemRule(HangRule):
        __doc__ = f"The hang rule plugin {problem.name} ({problem.source}) loads."
        id = f"plugin-{placeholder_slug(problem.name)}"
        source = problem.source
        plugin_problem = problem

        def match(self, thread):
            return None

    return PluginProblemRule
