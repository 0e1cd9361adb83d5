"""The profile rule family: the built-in ``tpudoctor.profile.rules`` plus plugins of the shared ``tpudoctor``
entry-point group (and its old ``tpudoctor.profile_rules`` group), through the one plugin registry
(``tpudoctor.plugins``). Duplicate or malformed ids are an error at load time; a plugin that cannot be loaded
is a ``plugin-<name>`` rule whose finding is an ERROR naming it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from tpudoctor.plugins import Family, Rules, evaluating_placeholder
from tpudoctor.profile.rule import RULE_ID_PATTERN, ProfileRule

ENTRY_POINT_GROUP = "tpudoctor.profile_rules"
"""The family's old entry-point group, still read (new plugins use the shared ``tpudoctor`` group)."""
BUILTIN_RULE_PACKAGE = "tpudoctor.profile.rules"



FAMILY = Family(judges="`tpudoctor profile analyze`: one host's profile figures",
                name="profile-rules", what="profile rule", builtin=(BUILTIN_RULE_PACKAGE,), bases=(ProfileRule,),
                alias_group=ENTRY_POINT_GROUP, id_pattern=RULE_ID_PATTERN, placeholder=evaluating_placeholder(ProfileRule, "profile"),
                conformance="tpudoctor.testing:profile_rule_conformance_problems")


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
               disabled: Collection[str] = ()) -> Rules:
    """Rule id -> rule class, built-ins first, in id order within each source; ``disabled`` names plugins
    to leave out (the run's ``disable_plugins`` setting)."""
    return FAMILY.load(extra_sources, plugins=plugins, disabled=disabled)
