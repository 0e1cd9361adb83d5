"""The failure-signature catalog: loads ``catalog.toml`` and compiles it once.

The knowledge lives in the data file; this module only validates it and turns it into
compiled regexes, plus a literal keyword per pattern so a long log is pre-filtered with
fast substring tests before any regex runs.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from functools import cache
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tpudoctor.findings import Remediation, Severity
from tpudoctor.logdiag.parsers import PARSERS, parse_bytes

CATALOG_FILE = "catalog.toml"
_VALUE_TYPES = ("bytes", "int", "float", "str")
_LAYERS = ("runtime", "multihost", "cloud", "storage", "info")
DIAGNOSIS_FACTS = ("location", "source", "first_line_no", "last_line_no", "first_timestamp", "count",
                   "log_excerpt", "layer", "sources")
"""Evidence keys every log finding carries beside the values its signature pulled from the log;
reserved, so that no pulled value is hidden by them."""


XLA_ERRORS_PAGE = "https://openxla.org/xla/errors/error_{}"
_XLA_CODE = re.compile(r"^(?:E\d{4}|E\d{2}xx|E\dxxx|C\d{4})$")


def xla_error_page(code: str) -> str:
    """The page of XLA's error catalog (openxla/xla docs/errors) for a code: E0200 -> .../error_0200."""
    return XLA_ERRORS_PAGE.format(code[1:] if code.startswith("E") else code)


class CatalogError(ValueError):
    """The catalog file is malformed (a bug in the package or in a user catalog)."""


@dataclasses.dataclass(frozen=True)
class Extractor:
    name: str
    regex: re.Pattern[str]
    type: str
    keyword: str | None = None
    """A literal the text must hold for the regex to match (pre-filter); context values only."""

    def extract(self, text: str) -> Any:
        match = self.regex.search(text)
        if match is None:
            return None
        raw = match.group(1).strip()
        try:
            if self.type == "bytes":
                return parse_bytes(raw)
            if self.type == "int":
                return int(raw)
            if self.type == "float":
                return float(raw)
        except ValueError:
            return None
        return raw


@dataclasses.dataclass(frozen=True)
class Signature:
    id: str
    title: str
    layer: str
    any_patterns: tuple[re.Pattern[str], ...]
    all_patterns: tuple[re.Pattern[str], ...]
    keywords: tuple[str | None, ...]
    """One literal per ``any`` pattern that must appear for it to match; None: no literal found."""
    priority: int
    fatal: bool
    severity: Severity
    cause: str
    remediation: Remediation
    source: str
    extractors: tuple[Extractor, ...] = ()
    supersedes: tuple[str, ...] = ()
    wrapper: bool = False
    """A generic wrapper message: dropped when a specific signature matches the same event."""
    suppress_when_equal: tuple[str, ...] = ()
    fallback: bool = False
    """Takes every error-level event no other signature names (``errorlevel``); it has no patterns."""
    parsers: tuple[str, ...] = ()
    """Named evidence parsers (``parsers.PARSERS``) for what one regex cannot pull."""
    folded: tuple[bool, ...] = ()
    """Per ``any`` pattern: case-insensitive, so its keyword is looked up in the lower-cased text."""
    context: tuple[str, ...] = ()
    """Names of catalog ``context`` values (seen earlier in the log) that join this finding's evidence."""
    consequence: bool = False
    """What the healthy workers of a slice show when another worker fails (a lost connection, a barrier
    timeout): across workers it follows from a cause elsewhere, whatever its time."""
    outcome_unknown: bool = False
    """Given when a short excerpt holds no failure and no sign of a healthy run: it cannot tell (no patterns)."""
    xla_error: str = ""
    """The code XLA's error catalog gives this failure (``E0200``, ``E2xxx``, ``C0432``); its page is the docs."""
    xla_error_when: tuple[tuple[str, re.Pattern[str]], ...] = ()
    """Other codes of the same signature, each when its pattern is in the event (the first that matches)."""

    def first_match(self, text: str, folded: str | None = None) -> re.Match[str] | None:
        """The earliest ``any`` match in ``text`` when every ``all`` pattern is present too.

        ``folded`` is ``text.lower()`` when the caller has it (keywords of case-insensitive
        patterns are lower case and are looked up there)."""
        best: re.Match[str] | None = None
        for keyword, pattern, fold in zip(self.keywords, self.any_patterns, self.folded, strict=True):
            if keyword is not None:
                if fold:
                    if folded is None:
                        folded = text.lower()
                    if keyword not in folded:
                        continue
                elif keyword not in text:
                    continue
            match = pattern.search(text)
            if match is not None and (best is None or match.start() < best.start()):
                best = match
        if best is None:
            return None
        if any(p.search(text) is None for p in self.all_patterns):
            return None
        return best

    def xla_code(self, text: str) -> str:
        """The XLA error code of this event ("" when the signature has none)."""
        return next((code for code, pattern in self.xla_error_when if pattern.search(text)), self.xla_error)

    def evidence(self, text: str) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if code := self.xla_code(text):
            found["xla_error_code"] = code
            found["xla_error_page"] = xla_error_page(code)
        for extractor in self.extractors:
            value = extractor.extract(text)
            if value is not None:
                found[extractor.name] = value
        return found


@dataclasses.dataclass(frozen=True)
class NodeJoin:
    """Node facts that explain a log finding (socket closed + node PREEMPTED = preemption)."""

    signatures: tuple[str, ...]
    states: tuple[str, ...]
    healths: tuple[str, ...]
    symptoms: tuple[str, ...]
    title: str
    cause: str
    remediation: Remediation | None

    def applies(self, signature_id: str, node: dict[str, Any]) -> bool:
        if signature_id not in self.signatures:
            return False
        node_symptoms = {str(s.get("type", "")) for s in node.get("symptoms") or [] if isinstance(s, dict)}
        return (
            str(node.get("state") or "") in self.states
            or str(node.get("health") or "") in self.healths
            or bool(node_symptoms & set(self.symptoms))
        )


@dataclasses.dataclass(frozen=True)
class Catalog:
    version: int
    signatures: tuple[Signature, ...]
    node_joins: tuple[NodeJoin, ...] = ()
    contexts: tuple[Extractor, ...] = ()
    """Values remembered from earlier lines (the coordinator address a worker connected to)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {s.id: s for s in self.signatures})
        exact: set[str] = {c.keyword for c in self.contexts if c.keyword}
        folded: set[str] = set()
        unfiltered: list[re.Pattern[str]] = []
        for sig in self.signatures:
            for keyword, pattern in zip(sig.keywords, sig.any_patterns, strict=True):
                if keyword is None:
                    unfiltered.append(pattern)  # no literal to look for: the regex itself is the filter
                elif pattern.flags & re.IGNORECASE:  # once per catalog: the enum test is slow
                    folded.add(keyword)
                else:
                    exact.add(keyword)
        object.__setattr__(self, "_keywords", tuple(sorted(exact, key=len, reverse=True)))
        object.__setattr__(self, "_folded_keywords", tuple(sorted(folded, key=len, reverse=True)))
        object.__setattr__(self, "_unfiltered", tuple(unfiltered))

    @property
    def exact_keywords(self) -> tuple[str, ...]:
        """The case-sensitive literals without which no signature can match (the prefilter's)."""
        return self._keywords  # type: ignore[attr-defined]

    @property
    def folded_keywords(self) -> tuple[str, ...]:
        return self._folded_keywords  # type: ignore[attr-defined]

    @property
    def has_folded_keywords(self) -> bool:
        return bool(self._folded_keywords)  # type: ignore[attr-defined]

    def get(self, signature_id: str) -> Signature:
        return self._by_id[signature_id]  # type: ignore[attr-defined]

    def ids(self) -> list[str]:
        return [s.id for s in self.signatures]

    def consequences(self) -> frozenset[str]:
        """Ids of the signatures that, across workers, follow from a cause elsewhere."""
        return frozenset(s.id for s in self.signatures if s.consequence)

    def may_match(self, line: str) -> bool:
        """Cheap pre-filter: could any signature match a text containing this line?"""
        if any(k in line for k in self._keywords):  # type: ignore[attr-defined]
            return True
        if self._folded_keywords:  # type: ignore[attr-defined]
            folded = line.lower()
            if any(k in folded for k in self._folded_keywords):  # type: ignore[attr-defined]
                return True
        return any(p.search(line) for p in self._unfiltered)  # type: ignore[attr-defined]


def required_literal(pattern: str) -> str | None:
    """The longest literal run that every match of ``pattern`` must contain, or None.

    Groups, classes and optional characters break a run; a top-level ``|`` means no single
    literal is required. Good enough for the catalog's patterns, which keep alternatives in
    separate ``any`` entries.
    """
    runs: list[str] = []
    current: list[str] = []
    i, n, depth = 0, len(pattern), 0

    def cut(drop_last: bool = False) -> None:
        if drop_last and current:
            current.pop()
        if current:
            runs.append("".join(current))
        current.clear()

    while i < n:
        ch = pattern[i]
        if depth:
            if ch == "\\":
                i += 2
                continue
            depth += ch == "("
            depth -= ch == ")"
            i += 1
            continue
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt.isalnum():  # \s \d \w \b ...: not literal
                cut()
            else:
                current.append(nxt)
            i += 2
            continue
        if ch == "|":
            return None
        if ch == "(":
            cut()
            depth = 1
        elif ch == "[":
            cut()
            close = pattern.find("]", i + 2)
            i = n if close < 0 else close
        elif ch in "*?{":
            cut(drop_last=True)
            if ch == "{":
                close = pattern.find("}", i)
                i = n if close < 0 else close
        elif ch in ".^$+":
            cut(drop_last=False)
        else:
            current.append(ch)
        i += 1
    cut()
    best = max(runs, key=len, default="")
    return best if len(best) >= 4 else None


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        raise CatalogError(f"{where}: bad regex {pattern!r}: {exc}") from exc


def _signature(raw: dict[str, Any]) -> Signature:
    sid = raw.get("id")
    where = f"signature {sid!r}"
    fallback = bool(raw.get("fallback", False))
    unknown = bool(raw.get("outcome_unknown", False))
    xla_error = str(raw.get("xla_error", ""))
    when = [(str(code), _compile(pattern, where)) for code, pattern in raw.get("xla_error_when", [])]
    for code in [xla_error, *(c for c, _ in when)]:
        if code and not _XLA_CODE.match(code):
            raise CatalogError(f"{where}: xla_error {code!r} is not a code of XLA's error catalog (E0200, E2xxx, C0432)")
    if xla_error:  # the code's page is the docs
        if "docs" in raw:
            raise CatalogError(f"{where}: a signature with an xla_error has its page as the docs; drop 'docs'")
        raw = {**raw, "docs": xla_error_page(xla_error)}
    for key in ("id", "title", "layer", "cause", "fix", "docs", "severity", "fatal") + (() if fallback or unknown else ("any",)):
        if key not in raw:
            raise CatalogError(f"{where}: missing '{key}'")
    if (fallback or unknown) and (raw.get("any") or raw.get("all")):
        raise CatalogError(f"{where}: the fallback has no patterns: it takes every error-level event no other "
                           "signature names (tpudoctor/logdiag/errorlevel.py)")
    if raw["layer"] not in _LAYERS:
        raise CatalogError(f"{where}: layer must be one of {_LAYERS}")
    if not str(raw["docs"]).startswith("https://"):
        raise CatalogError(f"{where}: docs must be an https:// link")
    any_src = list(raw.get("any", ()))
    if not any_src and not (fallback or unknown):
        raise CatalogError(f"{where}: 'any' is empty")
    extractors = [_extractor(spec, where) for spec in raw.get("extract", [])]
    fix = raw["fix"]
    parsers = tuple(raw.get("parsers", ()))
    unknown_parsers = [p for p in parsers if p not in PARSERS]
    if unknown_parsers:
        raise CatalogError(f"{where}: unknown parsers {unknown_parsers} (known: {sorted(PARSERS)})")
    return Signature(
        id=str(raw["id"]),
        title=raw["title"],
        layer=raw["layer"],
        any_patterns=tuple(_compile(p, where) for p in any_src),
        all_patterns=tuple(_compile(p, where) for p in raw.get("all", [])),
        keywords=tuple(_keyword(p) for p in any_src),
        priority=int(raw.get("priority", 50)),
        fatal=bool(raw["fatal"]),
        severity=Severity(raw["severity"]),
        cause=raw["cause"],
        remediation=Remediation(
            text=fix.get("text", ""), commands=tuple(fix.get("commands", ())), docs_url=raw["docs"]
        ),
        source=raw.get("source", ""),
        extractors=tuple(extractors),
        supersedes=tuple(raw.get("supersedes", ())),
        wrapper=bool(raw.get("wrapper", False)),
        suppress_when_equal=tuple(raw.get("suppress_when_equal", ())),
        fallback=fallback,
        parsers=parsers,
        folded=tuple(p.startswith("(?i)") for p in any_src),
        context=tuple(raw.get("context", ())),
        consequence=bool(raw.get("consequence", False)),
        outcome_unknown=unknown,
        xla_error=xla_error,
        xla_error_when=tuple(when),
    )


def _extractor(spec: dict[str, Any], where: str, *, keyed: bool = False) -> Extractor:
    if spec.get("type") not in _VALUE_TYPES:
        raise CatalogError(f"{where}: extract type must be one of {_VALUE_TYPES}")
    regex = _compile(spec["regex"], where)
    if regex.groups < 1:
        raise CatalogError(f"{where}: extract regex for {spec['name']} needs a group")
    if spec["name"] in DIAGNOSIS_FACTS:
        raise CatalogError(f"{where}: {spec['name']!r} is reserved for where the finding was seen; name it otherwise")
    keyword = required_literal(spec["regex"]) if keyed else None
    if keyed and keyword is None:
        raise CatalogError(f"{where}: context regex for {spec['name']} needs a literal of 4+ characters")
    return Extractor(spec["name"], regex, spec["type"], keyword)


def _keyword(pattern: str) -> str | None:
    """The pre-filter literal of one pattern; lower case for a case-insensitive ``(?i)`` one."""
    literal = required_literal(pattern)
    if literal is not None and pattern.startswith("(?i)"):
        return literal.lower()
    return literal


def parse_catalog(text: str) -> Catalog:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"catalog is not valid TOML: {exc}") from exc
    if not isinstance(data.get("version"), int):
        raise CatalogError("catalog needs an integer 'version'")
    signatures = tuple(_signature(raw) for raw in data.get("signature", []))
    ids = [s.id for s in signatures]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise CatalogError(f"duplicate signature ids: {', '.join(dupes)}")
    for sig in signatures:
        unknown = [s for s in sig.supersedes if s not in ids]
        if unknown:
            raise CatalogError(f"signature {sig.id!r} supersedes unknown ids {unknown}")
    joins = []
    for raw in data.get("node_join", []):
        fix = raw.get("fix")
        unknown = [s for s in raw.get("signatures", []) if s not in ids]
        if unknown:
            raise CatalogError(f"node_join {raw.get('title')!r} names unknown signatures {unknown}")
        joins.append(NodeJoin(
            signatures=tuple(raw["signatures"]),
            states=tuple(raw.get("states", ())),
            healths=tuple(raw.get("healths", ())),
            symptoms=tuple(raw.get("symptoms", ())),
            title=raw["title"],
            cause=raw["cause"],
            remediation=Remediation(fix.get("text", ""), tuple(fix.get("commands", ())), raw.get("docs"))
            if fix else None,
        ))
    contexts = tuple(_extractor(spec, f"context {spec.get('name')!r}", keyed=True)
                     for spec in data.get("context", []))
    names = {c.name for c in contexts}
    for sig in signatures:
        unknown = [c for c in sig.context if c not in names]
        if unknown:
            raise CatalogError(f"signature {sig.id!r} names unknown context values {unknown}")
    return Catalog(version=data["version"], signatures=signatures, node_joins=tuple(joins), contexts=contexts)


@cache
def load_catalog() -> Catalog:
    """The built-in catalog shipped in the package."""
    text = resources.files(__package__).joinpath(CATALOG_FILE).read_text(encoding="utf-8")
    return parse_catalog(text)
