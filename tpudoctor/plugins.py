"""The one plugin registry: checks, fact providers, profile, hang and goodput rules, found the same way.

Every extension is a ``Family``: its name, what its members are called, the built-in packages registered
directly (so a source checkout works too), the base class(es) it takes and its id rule. Third parties use one
entry-point group, ``tpudoctor`` (like pytest's ``pytest11``): an entry point names a module or package (every
public subclass of a family's base defined in it, whatever the family), a single class, or a callable
returning classes; each family takes the classes of its own bases. The groups each family had before
(``tpudoctor.checks``, ``tpudoctor.profile_rules``, ``tpudoctor.hang_rules``, ``tpudoctor.goodput_rules``)
are still read, as aliases.

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
from typing import TYPE_CHECKING, Any

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

    sources: list[tuple[str, dict[type, list[type[Any]]]]]
    problems: list[PluginProblem]


def _is_disabled(ep: metadata.EntryPoint, disabled: Collection[str]) -> bool:
    dist = ep.dist.name if ep.dist else None
    return ep.name in disabled or (dist is not None and (dist in disabled or f"{dist}:{ep.name}" in disabled))


def unknown_plugin_names(disabled: Collection[str]) -> list[str]:
    """The names in ``disabled`` that no installed plugin answers to (entry-point name, distribution, or
    ``distribution:name``). Not an error: one ``disable_plugins`` setting serves machines where the plugin is
    installed and others where it is not; but a name that matches nothing here may be a typo, so it is said."""
    from importlib import metadata

    installed = metadata.entry_points()
    groups = [g for g in installed.groups if g == ENTRY_POINT_GROUP or g.startswith(ENTRY_POINT_GROUP + ".")]
    known: set[str] = set()
    for ep in (ep for group in groups for ep in installed.select(group=group)):  # the shared group and the aliases
        if _is_own(ep):
            continue
        known.add(ep.name)
        if ep.dist is not None:
            known |= {ep.dist.name, f"{ep.dist.name}:{ep.name}"}
    return [name for name in disabled if name not in known]


def _modules_of(module: ModuleType) -> list[ModuleType]:
    modules = [module]
    if hasattr(module, "__path__"):
        modules += [importlib.import_module(info.name)
                    for info in pkgutil.walk_packages(module.__path__, prefix=module.__name__ + ".")]
    return modules


def classes_in(target: object, bases: tuple[type, ...], what: str, *, strict: bool = True) -> dict[type, list[type[Any]]]:
    """Base -> the classes ``target`` (a module or package, a class, or a callable returning classes)
    provides; ``RegistryError`` for an object that is none of the bases, unless not ``strict`` (the shared
    group's entry points hold other families' classes too)."""
    found: dict[type, list[type[Any]]] = {base: [] for base in bases}
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
        matched = next((b for b in bases if inspect.isclass(item) and issubclass(item, b)), None)
        if matched is None:
            if not strict:
                continue
            raise RegistryError(f"entry point object {item!r} is not a {what}")
        found[matched].append(item)
    return found


ENTRY_POINT_GROUP = "tpudoctor"
"""The one entry-point group for every family's plugins."""


def discover(*, group: str, builtin: Iterable[str], bases: tuple[type, ...], what: str,
             extra_sources: Iterable[tuple[str, object]] = (), plugins: bool = True,
             disabled: Collection[str] = ()) -> Discovery:
    """Built-in packages, then the entry points of the shared ``tpudoctor`` group and of the family's alias
    ``group`` (less ``disabled``: the run's ``disable_plugins`` setting), then ``extra_sources``. A plugin
    that fails to import or to give its classes is a ``PluginProblem``; a broken built-in or extra source is
    an error. From the shared group a family takes only the classes of its own bases."""
    builtin = list(builtin)
    sources = [("builtin", classes_in(importlib.import_module(name), bases, what)) for name in builtin]
    problems: list[PluginProblem] = []
    if plugins:
        from importlib import metadata

        seen: set[tuple[str, str]] = set()
        installed = metadata.entry_points()  # one scan: it reads every distribution's entry_points.txt
        for ep_group, strict in ((ENTRY_POINT_GROUP, False), (group, True)):
            for ep in installed.select(group=ep_group):
                if ep.value in builtin or _is_own(ep) or _is_disabled(ep, disabled) or (ep.name, ep.value) in seen:
                    continue
                seen.add((ep.name, ep.value))
                source = f"{ep.dist.name if ep.dist else ep.name}:{ep.name}"
                try:
                    sources.append((source, classes_in(ep.load(), bases, what, strict=strict)))
                except Exception as exc:  # noqa: BLE001 - a broken plugin is a named entry, not a crash
                    problems.append(PluginProblem(name=ep.name, source=source, group=ep_group, what=what,
                                                  error=f"{type(exc).__name__}: {exc}"))
    sources += [(source, classes_in(target, bases, what)) for source, target in extra_sources]
    return Discovery(sources=sources, problems=problems)


def _is_own(ep: metadata.EntryPoint) -> bool:
    """tpudoctor's own entry points name its built-in packages, which the caller's ``builtin`` lists (or leaves
    out on purpose, e.g. a merge loads the slice checks only). The distribution's name as importlib.metadata
    read it from its folder's name (what its own scan tells distributions apart by), where it did: ``name``
    parses the distribution's METADATA, 1-3 ms a call and the email package's import the first time."""
    if ep.dist is None:
        return False
    return (getattr(ep.dist, "_normalized_name", None) or ep.dist.name) == "tpudoctor"


def _disable_hint(source: str) -> str | None:
    if source == "builtin" or ":" not in source:
        return None
    name = shlex.quote(source.split(":", 1)[1])
    return f"leave the plugin out with {DISABLE_FLAG} {name} (or {DISABLE_ENV}={name}), or fix or uninstall it"


def register_by_id(sources: Iterable[tuple[str, Iterable[type[Any]]]], *, id_pattern: re.Pattern[str], what: str,
                   id_example: str = "") -> dict[str, type[Any]]:
    """Id -> class, in load order; a class from a plugin gets ``source``. An invalid or duplicate id is a
    ``RegistryError`` (the hint says how to leave a plugin out)."""
    found: dict[str, type[Any]] = {}
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


def evaluating_placeholder(base: type, kind: str, *,
                           rule_id: Callable[[PluginProblem], str] | None = None) -> Callable[[PluginProblem], type[Any]]:
    """The placeholder of a family whose members ``evaluate(subject) -> Finding``: for a plugin that could not
    load, a member of ``base`` whose every evaluation is the problem's ERROR finding of ``kind`` (a
    ``FindingKind`` value; the finding model is imported when a placeholder is built, not before). Its id is
    ``plugin-<name>`` unless the family's ids take another form (``rule_id``)."""

    def placeholder(problem: PluginProblem) -> type:
        from tpudoctor.findings import FindingKind

        finding_kind = FindingKind(kind)

        class PluginProblemRule(base):
            __doc__ = f"The {problem.what} plugin {problem.name} ({problem.source}) loads."
            id = rule_id(problem) if rule_id else f"plugin-{placeholder_slug(problem.name)}"
            title = f"{problem.what} plugin {problem.name} loads"
            source = problem.source
            plugin_problem = problem

            def evaluate(self, subject: object) -> Finding:
                return problem.finding(self.id, finding_kind)

        return PluginProblemRule

    return placeholder


def matching_placeholder(base: type) -> Callable[[PluginProblem], type[Any]]:
    """The placeholder of a family whose members ``match`` (hang rules): a member that never matches and
    carries the problem, which the product shows as an ERROR finding naming the plugin."""

    def placeholder(problem: PluginProblem) -> type:
        class PluginProblemRule(base):
            __doc__ = f"The {problem.what} plugin {problem.name} ({problem.source}) loads."
            id = f"plugin-{placeholder_slug(problem.name)}"
            source = problem.source
            plugin_problem = problem

            def match(self, thread: object) -> None:
                return None

        return PluginProblemRule

    return placeholder


def check_style_id(problem: PluginProblem) -> str:
    """A placeholder id in the check style, stable per plugin: ``PLUGIN-123``."""
    return f"PLUGIN-{sum(map(ord, problem.source)) % 900 + 100:03d}"


def _resolve(path: str) -> type:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


class Rules(dict):
    """What one family registered: id -> class, built-ins first, each source's classes in id order; a plugin
    that could not be loaded is there as its family's placeholder, a rule that reports it."""

    def __init__(self, family: Family, found: dict[str, type[Any]]):
        super().__init__(found)
        self.family = family

    def plugin_problems(self) -> list[type[Any]]:
        return [cls for cls in self.values() if plugin_problem_of(cls) is not None]


@dataclasses.dataclass(frozen=True)
class Family:
    """One kind of extension: what it is called, where its built-ins live, what it takes, its id rule."""

    name: str
    """The family's name in the reference and the conformance test: ``profile-rules``."""
    what: str
    """One member in words: "profile rule"."""
    builtin: tuple[str, ...]
    base_paths: tuple[str, ...]
    """``module:Class`` of each base the family takes (the first is its members'), imported on load."""
    alias_group: str
    """The entry-point group this family had before the shared ``tpudoctor`` one; still read."""
    id_pattern: re.Pattern[str]
    id_example: str = " (lowercase words joined by '-', e.g. acme-slow-io)"
    placeholder: str | None = None
    """The rule that stands for a plugin that could not be loaded: ``evaluating`` (its finding is an ERROR naming
    it; ``evaluating-check-id`` with a check-style id), ``matching`` (a member that never matches, which the
    product shows as an ERROR), or None (the family makes its own)."""
    judges: str = ""
    """What its members judge, for the reference: "`tpudoctor goodput`'s figures"."""
    conformance: str = "tpudoctor.rule:conformance_problems"
    """``module:function`` listing what a member gets wrong (its examples run); the conformance test runs it on
    every member of every family, plugins included."""

    @property
    def bases(self) -> tuple[type, ...]:
        return tuple(_resolve(path) for path in self.base_paths)

    def placeholder_for(self, problem: PluginProblem) -> type[Any] | None:
        base: Any = self.bases[0]
        if self.placeholder == "matching":
            return matching_placeholder(base)(problem)
        if self.placeholder in ("evaluating", "evaluating-check-id"):
            rule_id = check_style_id if self.placeholder == "evaluating-check-id" else None
            return evaluating_placeholder(base, base.kind.value, rule_id=rule_id)(problem)
        return None

    def discover(self, extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
                 disabled: Collection[str] = (), builtin: Iterable[str] | None = None) -> Discovery:
        return discover(group=self.alias_group, builtin=list(self.builtin if builtin is None else builtin),
                        bases=self.bases, what=self.what, extra_sources=extra_sources, plugins=plugins,
                        disabled=disabled)

    def load(self, extra_sources: Iterable[tuple[str, object]] = (), *, plugins: bool = True,
             disabled: Collection[str] = ()) -> Rules:
        """Id -> class of the family's first base; ``disabled`` names plugins to leave out (the run's
        ``disable_plugins`` setting)."""
        discovery = self.discover(extra_sources, plugins=plugins, disabled=disabled)
        base = self.bases[0]
        found = register_by_id(((source, sorted(by_base[base], key=lambda c: c.id))
                                for source, by_base in discovery.sources), id_pattern=self.id_pattern,
                               what=self.what, id_example=self.id_example)
        for problem in discovery.problems:
            cls = self.placeholder_for(problem)
            if cls is not None:
                found.setdefault(cls.id, cls)
        return Rules(self, found)


def plugin_problem_of(cls: type) -> PluginProblem | None:
    """The problem a placeholder class stands for; None for a real check or rule."""
    return getattr(cls, "plugin_problem", None)
