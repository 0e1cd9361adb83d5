"""Declarative classes from a built-in package plus an entry-point group, keyed by their ``id``.

One loader for every registry of rule-like classes: an entry point may name a module or package (every
public subclass of ``base`` defined in it), a single class, or a callable returning classes, as for the
check registry. Invalid or duplicate ids, and a plugin that fails to load, are a ``RegistryError``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterable
from importlib import metadata
from types import ModuleType

from tpudoctor.registry import RegistryError


def classes_in(target: object, base: type, what: str) -> list[type]:
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
            raise RegistryError(f"entry point object {item!r} is not a {what}")
        found.append(item)
    return found


def plugin_sources(group: str, builtin_value: str, what: str) -> list[tuple[str, object]]:
    sources: list[tuple[str, object]] = []
    for ep in metadata.entry_points(group=group):
        if ep.value == builtin_value:
            continue  # loaded explicitly, so a source checkout works too
        try:
            sources.append((f"{ep.dist.name if ep.dist else ep.name}:{ep.name}", ep.load()))
        except Exception as exc:  # a broken plugin must say so, not crash with a traceback
            raise RegistryError(f"could not load {what} plugin '{ep.name}' ({ep.value}): {exc}",
                                hint="uninstall or fix the plugin package") from exc
    return sources


def load_plugin_classes(*, builtin_package: str, group: str, base: type, id_pattern: re.Pattern[str], what: str,
                        extra_sources: Iterable[tuple[str, object]] = (), plugins: bool = True) -> dict[str, type]:
    """Id -> class, built-ins first, in id order within each source; a plugin class gets ``source``."""
    sources: list[tuple[str, object]] = [("builtin", importlib.import_module(builtin_package))]
    if plugins:
        sources += plugin_sources(group, builtin_package, what)
    sources += list(extra_sources)
    found: dict[str, type] = {}
    for source, target in sources:
        for cls in sorted(classes_in(target, base, what), key=lambda c: c.id):
            if not id_pattern.match(cls.id or ""):
                raise RegistryError(f"{what} {cls.__qualname__} from {source} has invalid id {cls.id!r} "
                                    "(lowercase words joined by '-', e.g. acme-slow-io)")
            other = found.get(cls.id)
            if other is not None and other is not cls:
                raise RegistryError(f"duplicate {what} id {cls.id}: {other.__module__}.{other.__qualname__} "
                                    f"and {cls.__module__}.{cls.__qualname__} ({source})")
            if source != "builtin":
                cls.source = source
            found[cls.id] = cls
    return found
