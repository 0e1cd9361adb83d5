"""Finds rule classes: a built-in package plus an entry-point group (a module or package, a rule class,
or a callable returning rule classes), as the check registry does for ``tpudoctor.checks``. Shared by
the profile rules and the goodput rules; duplicate or malformed ids are an error at load time.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterable
from importlib import metadata
from types import ModuleType
from typing import TypeVar

from tpudoctor.registry import RegistryError

R = TypeVar("R", bound=type)


def rules_in(target: object, base: type) -> list[type]:
    """The ``base`` subclasses a module or package defines (not imported ones, not ``_private``), or those
    a class, a list or a callable gives."""
    if isinstance(target, ModuleType):
        modules = [target]
        if hasattr(target, "__path__"):
            modules += [importlib.import_module(info.name)
                        for info in pkgutil.walk_packages(target.__path__, prefix=target.__name__ + ".")]
        return [obj for module in modules for _, obj in inspect.getmembers(module, inspect.isclass)
                if issubclass(obj, base) and obj is not base and obj.__module__ == module.__name__
                and not obj.__name__.startswith("_")]
    items = target() if callable(target) and not inspect.isclass(target) else target
    if inspect.isclass(items):
        items = [items]
    found = []
    for item in items:  # type: ignore[union-attr]
        if not (inspect.isclass(item) and issubclass(item, base)):
            raise RegistryError(f"entry point object {item!r} is not a {base.__name__}")
        found.append(item)
    return found


def plugin_sources(group: str, builtin_package: str, what: str) -> list[tuple[str, object]]:
    sources: list[tuple[str, object]] = []
    for ep in metadata.entry_points(group=group):
        if ep.value == builtin_package:
            continue  # loaded explicitly, so a source checkout works too
        try:
            sources.append((f"{ep.dist.name if ep.dist else ep.name}:{ep.name}", ep.load()))
        except Exception as exc:  # a broken plugin must say so, not crash with a traceback
            raise RegistryError(f"could not load {what} plugin '{ep.name}' ({ep.value}): {exc}",
                                hint="uninstall or fix the plugin package") from exc
    return sources


def load_rule_classes(base: type, *, builtin_package: str, group: str, id_pattern: re.Pattern, what: str,
                      extra_sources: Iterable[tuple[str, object]] = (), plugins: bool = True) -> dict[str, type]:
    """Rule id -> rule class, built-ins first, in id order within each source."""
    sources: list[tuple[str, object]] = [("builtin", importlib.import_module(builtin_package))]
    if plugins:
        sources += plugin_sources(group, builtin_package, what)
    sources += list(extra_sources)
    rules: dict[str, type] = {}
    for source, target in sources:
        for cls in sorted(rules_in(target, base), key=lambda c: c.id):
            if not id_pattern.match(cls.id or ""):
                raise RegistryError(f"{what} {cls.__qualname__} from {source} has invalid id {cls.id!r} "
                                    "(lowercase words joined by '-', e.g. acme-slow-io)")
            other = rules.get(cls.id)
            if other is not None and other is not cls:
                raise RegistryError(f"duplicate {what} id {cls.id}: {other.__module__}.{other.__qualname__} "
                                    f"and {cls.__module__}.{cls.__qualname__} ({source})")
            if source != "builtin":
                cls.source = source
            rules[cls.id] = cls
    return rules
