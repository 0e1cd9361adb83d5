"""Finds hang rules: the built-in ``tpudoctor.hang.rules`` plus the ``tpudoctor.hang_rules`` entry points."""

from __future__ import annotations

from collections.abc import Iterable

from tpudoctor.hang.rule import RULE_ID_PATTERN, HangRule

ENTRY_POINT_GROUP = "tpudoctor.hang_rules"
BUILTIN_RULE_PACKAGE = "tpudoctor.hang.rules"


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True) -> dict[str, type[HangRule]]:
    """Rule id -> rule class."""
    from tpudoctor.plugins import load_plugin_classes

    return load_plugin_classes(builtin_package=BUILTIN_RULE_PACKAGE, group=ENTRY_POINT_GROUP, base=HangRule,
                               id_pattern=RULE_ID_PATTERN, what="hang rule", extra_sources=extra_sources,
                               plugins=plugins)
