"""The hang rule family (where a thread stands): the built-in ``tpudoctor.hang.rules`` plus plugins of the
shared ``tpudoctor`` entry-point group (and its old ``tpudoctor.hang_rules`` group), through the one plugin
registry (``tpudoctor.plugins``). A plugin that cannot be loaded is a rule that never matches and carries the
problem; ``analyze`` shows it as an ERROR finding naming the plugin."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from tpudoctor.hang.rule import RULE_ID_PATTERN, HangRule
from tpudoctor.plugins import Family, PluginProblem, Rules, placeholder_slug

ENTRY_POINT_GROUP = "tpudoctor.hang_rules"
"""The family's old entry-point group, still read (new plugins use the shared ``tpudoctor`` group)."""
BUILTIN_RULE_PACKAGE = "tpudoctor.hang.rules"


def _problem_rule(problem: PluginProblem) -> type[HangRule]:
    class PluginProblemRule(HangRule):
        __doc__ = f"The hang rule plugin {problem.name} ({problem.source}) loads."
        id = f"plugin-{placeholder_slug(problem.name)}"
        source = problem.source
        plugin_problem = problem

        def match(self, thread):
            return None

    return PluginProblemRule


FAMILY = Family(judges='`tpudoctor hang`: where a thread stands',
                name="hang-rules", what="hang rule", builtin=(BUILTIN_RULE_PACKAGE,), bases=(HangRule,),
                alias_group=ENTRY_POINT_GROUP, id_pattern=RULE_ID_PATTERN, placeholder=_problem_rule)


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
               disabled: Collection[str] = ()) -> Rules:
    """Rule id -> rule class; ``disabled`` names plugins to leave out (the run's ``disable_plugins`` setting)."""
    return FAMILY.load(extra_sources, plugins=plugins, disabled=disabled)
