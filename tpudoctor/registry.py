"""Finds checks and fact providers: the built-in packages plus the ``tpudoctor.checks`` entry points.

An entry point may name a module or package (every ``Check`` and ``FactProvider`` subclass
defined in it is taken), a single class, or a callable returning classes, like pytest's
``pytest11`` plugins. Duplicate check ids or fact keys are an error at load time.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from collections.abc import Iterable
from importlib import metadata
from types import ModuleType

from tpudoctor.check import CHECK_ID_PATTERN, Check
from tpudoctor.errors import TpudoctorError
from tpudoctor.exitcodes import ExitCode
from tpudoctor.provider import FactProvider

ENTRY_POINT_GROUP = "tpudoctor.checks"
BUILTIN_CHECK_PACKAGE = "tpudoctor.checks"
BUILTIN_PROVIDER_PACKAGE = "tpudoctor.providers"


class RegistryError(TpudoctorError):
    exit_code = ExitCode.INTERNAL_ERROR


@dataclasses.dataclass
class Registry:
    checks: dict[str, type[Check]]
    providers: dict[str, type[FactProvider]]
    """Fact key -> the provider class that fills it."""

    def check_classes(self) -> list[type[Check]]:
        return sorted(self.checks.values(), key=lambda c: (int(c.step), c.id))

    def provider_for(self, key: str) -> type[FactProvider] | None:
        return self.providers.get(key)


def _walk_module(module: ModuleType) -> Iterable[ModuleType]:
    yield module
    if hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, prefix=module.__name__ + "."):
            yield importlib.import_module(info.name)


def _classes_in(module: ModuleType, base: type) -> list[type]:
    return [
        obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, base) and obj is not base and obj.__module__ == module.__name__
        and not obj.__name__.startswith("_")
    ]


def _objects_from(target: object) -> tuple[list[type[Check]], list[type[FactProvider]]]:
    checks: list[type[Check]] = []
    providers: list[type[FactProvider]] = []
    if isinstance(target, ModuleType):
        for module in _walk_module(target):
            checks += _classes_in(module, Check)
            providers += _classes_in(module, FactProvider)
        return checks, providers
    items = target() if callable(target) and not inspect.isclass(target) else target
    if inspect.isclass(items):
        items = [items]
    for item in items:  # type: ignore[union-attr]
        if inspect.isclass(item) and issubclass(item, Check):
            checks.append(item)
        elif inspect.isclass(item) and issubclass(item, FactProvider):
            providers.append(item)
        else:
            raise RegistryError(f"entry point object {item!r} is neither a Check nor a FactProvider")
    return checks, providers


def _plugin_sources() -> list[tuple[str, object]]:
    sources: list[tuple[str, object]] = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.value == BUILTIN_CHECK_PACKAGE:
            continue  # loaded explicitly below, so a source checkout works too
        try:
            sources.append((f"{ep.dist.name if ep.dist else ep.name}:{ep.name}", ep.load()))
        except Exception as exc:  # a broken plugin must say so, not crash with a traceback
            raise RegistryError(
                f"could not load check plugin '{ep.name}' ({ep.value}): {exc}",
                hint="uninstall or fix the plugin package",
            ) from exc
    return sources


def load_registry(extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True) -> Registry:
    sources: list[tuple[str, object]] = [
        ("builtin", importlib.import_module(BUILTIN_CHECK_PACKAGE)),
        ("builtin", importlib.import_module(BUILTIN_PROVIDER_PACKAGE)),
    ]
    if plugins:
        sources += _plugin_sources()
    sources += list(extra_sources)

    checks: dict[str, type[Check]] = {}
    providers: dict[str, type[FactProvider]] = {}
    for source, target in sources:
        found_checks, found_providers = _objects_from(target)
        for cls in found_checks:
            if not CHECK_ID_PATTERN.match(cls.id or ""):
                raise RegistryError(f"check class {cls.__qualname__} from {source} has invalid id {cls.id!r}")
            other = checks.get(cls.id)
            if other is not None and other is not cls:
                raise RegistryError(
                    f"duplicate check id {cls.id}: {other.__module__}.{other.__qualname__} "
                    f"and {cls.__module__}.{cls.__qualname__} ({source})"
                )
            if source != "builtin":
                cls.source = source
            checks[cls.id] = cls
        for cls in found_providers:
            for key in cls.provides:
                other = providers.get(key)
                if other is not None and other is not cls:
                    raise RegistryError(
                        f"fact '{key}' is provided twice: by {other.__qualname__} and {cls.__qualname__} ({source})"
                    )
                if source != "builtin":
                    cls.source = source
                providers[key] = cls
    return Registry(checks=checks, providers=providers)
