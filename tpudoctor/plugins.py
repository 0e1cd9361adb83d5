"""The one plugin registry: checks, fact providers, profile, hang and goodput rules, found the same way.

Each family names its entry-point group, the built-in package(s) registered directly (so a source
checkout works too) and the base class(es) it takes. An entry point may name a module or package
(every public subclass of a base defined in it), a single class, or a callable returning classes,
like pytest's ``pytest11`` plugins.

A plugin that fails to import or to construct is not a traceback and is not dropped silently: it
becomes a ``PluginProblem`` naming it, which each family shows as an ERROR entry in its report, and
the run goes on. A plugin named in ``disabled`` (its entry-point name, its distribution's name, or
``distribution:name``) is not loaded at all. A plugin class with an invalid or duplicate id is a
``RegistryError`` that says how to disable it.

Which plugins are disabled is a setting (``--disable-plugin NAME``, ``TPUDOCTOR_DISABLE_PLUGINS``,
``disable_plugins`` in ``tpudoctor.toml``) that ``tpudoctor.settings`` resolves; the command hands it to
each loader as ``disabled``. This module reads no environment: a library caller that passes nothing
loads every plugin (a broken one is still only an ERROR entry).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
import shlex
from collections.abc import Callable, Collection, Iterable
from types import ModuleType
from typing import TYPE_CHECKING

from tpudoctor.errors import TpudoctorError
from tpudoctor.exitcodes import ExitCode

if TYPE_CHECKING:
    from importlib import metadata

    from tpudoctor.findings import Finding, FindingKind, Remediation

# importlib.metadata and the finding model are imported where they are used: every command's settings read the
# names below at its start, and only the commands that load plugins need the rest (about 65 modules).

DISABLE_ENV = "TPUDOCTOR_DISABLE_PLUGINS"
"""Comma-separated plugin names to leave out (entry-point name, distribution, or ``distribution:name``); named
here for the remediation text, read only by ``tpudoctor.settings``."""
DISABLE_FLAG = "--disable-plugin"
"""The command-line flag that leaves a plugin out (repeatable, or comma-separated)."""
DISABLE_CONFIG_KEY = "disable_plugins"


class RegistryError(TpudoctorError):
    exit_code = ExitCode.INTERNAL_ERROR


@dataclasses.dataclass(frozen=True)
class PluginProblem:
    """A plugin that could not be loaded: which one, from where, and why."""

    name: str
    """The entry point's name, what ``--disable-plugin`` takes."""
    source: str
    """``distribution:name``."""
    group: str
    what: str
    """The family in words: "check", "profile rule"."""
    error: str

    @property
    def distribution(self) -> str:
        return self.source.split(":", 1)[0]

    @property
    def message(self) -> str:
        return f"{self.what} plugin '{self.name}' ({self.source}) could not be loaded and was left out: {self.error}"

    @property
    def remediation(self) -> Remediation:
        from tpudoctor.findings import Remediation

        name = shlex.quote(self.name)
        return Remediation(text=f"Fix or uninstall the package that provides it, or leave it out by name: "
                                f"{DISABLE_FLAG} {name} on the command line, {DISABLE_ENV}={name} in the "
                                f"environment, or {DISABLE_CONFIG_KEY} = [\"{self.name}\"] in tpudoctor.toml.",
                           commands=(f"export {DISABLE_ENV}={name}", f"pip uninstall {shlex.quote(self.distribution)}"))

    def finding(self, finding_id: str, kind: FindingKind) -> Finding:
        """The ERROR entry a report shows for this plugin."""
        from tpudoctor.findings import Finding, Severity, Status

        return Finding(id=finding_id, step=None, title=f"{self.what} plugin {self.name} loads", status=Status.ERROR,
                       message=self.message, severity=Severity.MEDIUM,
                       evidence={"plugin": self.name, "source": self.source, "entry_point_group": self.group,
                                 "error": self.error},
                       remediation=self.remediation, kind=kind)


@dataclasses.dataclass
class Discovery:
    """What one family's discovery found: ``(source, classes by base)`` in load order, built-ins first,
    and the plugins that could not be loaded."""

    sources: list[tuple[str, dict[type, list[type]]]]
    problems: list[PluginProblem]


def _is_disabled(ep: metadata.EntryPoint, disabled: Collection[str]) -> bool:
    dist = ep.dist.name if ep.dist else None
    return ep.name in disabled or (dist is not None and (dist in disabled or f"{dist}:{ep.name}" in disabled))


def _modules_of(module: ModuleType) -> list[ModuleType]:
    modules = [module]
    if hasattr(module, "__path__"):
        modules += [importlib.import_module(info.name)
                    for info in pkgutil.walk_packages(module.__path__, prefix=module.__name__ + ".")]
    return modules


def classes_in(target: object, bases: tuple[type, ...], what: str) -> dict[type, list[type]]:
    """Base -> the classes ``target`` (a module or package, a class, or a callable returning classes)
    provides; ``RegistryError`` for an object that is none of the bases."""
    found: dict[type, list[type]] = {base: [] for base in bases}
    if isinstance(target, ModuleType):
        for module in _modules_of(target):
            for _, obj in inspect.getmembers(module, inspect.isclass):
                if obj.__module__ != module.__name__ or obj.__name__.startswith("_"):
                    continue
                for base in bases:
                    if issubclass(obj, base) and obj is not base:
                        found[base].append(obj)
        return found
    items = target() if callable(target) and not inspect.isclass(target) else target
    if inspect.isclass(items):
        items = [items]
    for item in items:  # type: ignore[union-attr]
        base = next((b for b in bases if inspect.isclass(item) and issubclass(item, b)), None)
        if base is None:
            raise RegistryError(f"entry point object {item!r} is not a {what}")
        found[base].append(item)
    return found


def discover(*, group: str, builtin: Iterable[str], bases: tuple[type, ...], what: str,
             extra_sources: Iterable[tuple[str, object]] = (), plugins: bool = True,
             disabled: Collection[str] = ()) -> Discovery:
    """Built-in packages, then the entry points of ``group`` (less ``disabled``: the run's
    ``disable_plugins`` setting), then ``extra_sources``. A plugin that fails to import or to give
    its classes is a ``PluginProblem``; a broken built-in or extra source is an error."""
    builtin = list(builtin)
    sources = [("builtin", classes_in(importlib.import_module(name), bases, what)) for name in builtin]
    problems: list[PluginProblem] = []
    if plugins:
        from importlib import metadata

        for ep in metadata.entry_points(group=group):
            if ep.value in builtin or _is_own(ep) or _is_disabled(ep, disabled):
                continue
            source = f"{ep.dist.name if ep.dist else ep.name}:{ep.name}"
            try:
                sources.append((source, classes_in(ep.load(), bases, what)))
            except Exception as exc:  # noqa: BLE001 - a broken plugin is a named entry, not a crash
                problems.append(PluginProblem(name=ep.name, source=source, group=group, what=what,
                                              error=f"{type(exc).__name__}: {exc}"))
    sources += [(source, classes_in(target, bases, what)) for source, target in extra_sources]
    return Discovery(sources=sources, problems=problems)


def _is_own(ep: metadata.EntryPoint) -> bool:
    """tpudoctor's own entry points name its built-in packages, which the caller's ``builtin`` lists (or leaves
    out on purpose, e.g. a merge loads the slice checks only)."""
    return ep.dist is not None and ep.dist.name == "tpudoctor"


def _disable_hint(source: str) -> str | None:
    if source == "builtin" or ":" not in source:
        return None
    name = shlex.quote(source.split(":", 1)[1])
    return f"leave the plugin out with {DISABLE_FLAG} {name} (or {DISABLE_ENV}={name}), or fix or uninstall it"


def register_by_id(sources: Iterable[tuple[str, Iterable[type]]], *, id_pattern: re.Pattern[str], what: str,
                   id_example: str = "") -> dict[str, type]:
    """Id -> class, in load order; a class from a plugin gets ``source``. An invalid or duplicate id is a
    ``RegistryError`` (the hint says how to leave a plugin out)."""
    found: dict[str, type] = {}
    for source, classes in sources:
        for cls in classes:
            if not id_pattern.match(cls.id or ""):
                raise RegistryError(f"{what} {cls.__qualname__} from {source} has invalid id {cls.id!r}{id_example}",
                                    hint=_disable_hint(source))
            other = found.get(cls.id)
            if other is not None and other is not cls:
                raise RegistryError(f"duplicate {what} id {cls.id}: {other.__module__}.{other.__qualname__} "
                                    f"and {cls.__module__}.{cls.__qualname__} ({source})", hint=_disable_hint(source))
            if source != "builtin":
                cls.source = source
            found[cls.id] = cls
    return found


def placeholder_slug(name: str) -> str:
    """A plugin name as a lowercase rule id part: ``Acme_Rules`` -> ``acme-rules``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unnamed"


def load_rule_classes(*, builtin_package: str, group: str, base: type, id_pattern: re.Pattern[str], what: str,
                      placeholder: Callable[[PluginProblem], type],
                      extra_sources: Iterable[tuple[str, object]] = (), plugins: bool = True,
                      disabled: Collection[str] = ()) -> dict[str, type]:
    """Id -> rule class for a rule family, built-ins first, in id order within each source; a plugin that
    could not be loaded is there as ``placeholder(problem)``, a rule that reports it."""
    discovery = discover(group=group, builtin=[builtin_package], bases=(base,), what=what,
                         extra_sources=extra_sources, plugins=plugins, disabled=disabled)
    found = register_by_id(((source, sorted(by_base[base], key=lambda c: c.id))
                            for source, by_base in discovery.sources), id_pattern=id_pattern, what=what,
                           id_example=" (lowercase words joined by '-', e.g. acme-slow-io)")
    for problem in discovery.problems:
        cls = placeholder(problem)
        found.setdefault(cls.id, cls)
    return found


def plugin_problem_of(cls: type) -> PluginProblem | None:
    """The problem a placeholder class stands for; None for a real check or rule."""
    return getattr(cls, "plugin_problem", None)
