"""Finds profile rules: the built-in ``tpudoctor.profile.rules`` plus the ``tpudoctor.profile_rules``
entry points (a module or package, a rule class, or a callable returning rule classes), as the
check registry does for ``tpudoctor.checks``. Duplicate or malformed ids are an error at load time.
"""

from __future__ import annotations

from collections.abc import Iterable

from tpudoctor.profile.rule import RULE_ID_PATTERN, ProfileRule

ENTRY_POINT_GROUP = "tpudoctor.profile_rules"
BUILTIN_RULE_PACKAGE = "tpudoctor.profile.rules"


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True
               ) -> dict[str, type[ProfileRule]]:
    """Rule id -> rule class, built-ins first, in id order within each source."""
    from tpudoctor.plugins import load_plugin_classes

    return load_plugin_classes(builtin_package=BUILTIN_RULE_PACKAGE, group=ENTRY_POINT_GROUP, base=ProfileRule,
                               id_pattern=RULE_ID_PATTERN, what="profile rule", extra_sources=extra_sources,
                               plugins=plugins)
