"""Finds profile rules: the built-in ``tpudoctor.profile.rules`` plus the ``tpudoctor.profile_rules``
entry points (a module or package, a rule class, or a callable returning rule classes), as the
check registry does for ``tpudoctor.checks``. Duplicate or malformed ids are an error at load time.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable
from importlib import metadata
from types import ModuleType

from tpudoctor.profile.rule import RULE_ID_PATTERN, ProfileRule
from tpudoctor.registry import RegistryError

ENTRY_POINT_GROUP = "tpudoctor.profile_rules"
BUILTIN_RULE_PACKAGE = "tpudoctor.profile.rules"


def _rules_in(target: object) -> list[type[ProfileRule]]:
    if isinstance(target, ModuleType):
        modules = [target]
        if hasattr(target, "__path__"):
            modules += [importlib.import_module(info.name)
                        for info in pkgutil.walk_packages(target.__path__, prefix=target.__name__ + ".")]
        return [obj for module in modules for _, obj in inspect.getmembers(module, inspect.isclass)
                if issubclass(obj, ProfileRule) and obj is not ProfileRule and obj.__module__ == module.__name__
                and not obj.__name__.startswith("_")]
    items = target() if callable(target) and not inspect.isclass(target) else target
    if inspect.isclass(items):
        items = [items]
    found = []
    for item in items:  # type: ignore[union-attr]
        if not (inspect.isclass(item) and issubclass(item, ProfileRule)):
            raise RegistryError(f"entry point object {item!r} is not a ProfileRule")
        found.append(item)
    return found


def _plugin_sources() -> list[tuple[str, object]]:
    sources: list[tuple[str, object]] = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.value == BUILTIN_RULE_PACKAGE:
            continue  # loaded explicitly, so a source checkout works too
        try:
            sources.append((f"{ep.dist.name if ep.dist else ep.name}:{ep.name}", ep.load()))
        except Exception as exc:  # a broken plugin must say so, not crash with a traceback
            raise RegistryError(f"could not load profile rule plugin '{ep.name}' ({ep.value}): {exc}",
                                hint="uninstall or fix the plugin package") from exc
    return sources


def load_rules(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True
               ) -> dict[str, type[ProfileRule]]:
    """Rule id -> rule class, built-ins first, in id order within each source."""
    sources: list[tuple[str, object]] = [("builtin", importlib.import_module(BUILTIN_RULE_PACKAGE))]
    if plugins:
        sources += _plugin_sources()
    sources += list(extra_sources)
    rules: dict[str, type[ProfileRule]] = {}
    for source, target in sources:
        for cls in sorted(_rules_in(target), key=lambda c: c.id):
            if not RULE_ID_PATTERN.match(cls.id or ""):
                raise RegistryError(f"profile rule {cls.__qualname__} from {source} has invalid id {cls.id!r} "
                                    "(lowercase words joined by '-', e.g. acme-slow-io)")
            other = rules.get(cls.id)
            if other is not None and other is not cls:
                raise RegistryError(f"duplicate profile rule id {cls.id}: {other.__module__}.{other.__qualname__} "
                                    f"and {cls.__module__}.{cls.__qualname__} ({source})")
            if source != "builtin":
                cls.source = source
            rules[cls.id] = cls
    return rules
