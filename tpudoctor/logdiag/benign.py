"""The catalog of error-level lines that healthy runs print (``benign.toml``, each entry with the public source
that shows it is harmless): read, checked, and matched against a line.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from functools import cache
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BENIGN_FILE = "benign.toml"


@dataclasses.dataclass(frozen=True)
class BenignLine:
    id: str
    pattern: re.Pattern[str]
    why: str
    source: str


def is_benign(line: str, benign: tuple[BenignLine, ...]) -> bool:
    return any(entry.pattern.search(line) for entry in benign)


class BenignCatalogError(ValueError):
    """``benign.toml`` is malformed (a bug in the package)."""


def parse_benign(text: str) -> tuple[BenignLine, ...]:
    data = tomllib.loads(text)
    entries = []
    for raw in data.get("benign", []):
        where = f"benign line {raw.get('id')!r}"
        for key in ("id", "pattern", "why", "source"):
            if not raw.get(key):
                raise BenignCatalogError(f"{where}: missing '{key}'")
        if not str(raw["source"]).startswith("https://"):
            raise BenignCatalogError(f"{where}: source must be an https:// link to the thread or code that shows it")
        try:
            pattern = re.compile(raw["pattern"])
        except re.error as exc:
            raise BenignCatalogError(f"{where}: bad regex: {exc}") from exc
        entries.append(BenignLine(raw["id"], pattern, raw["why"], raw["source"]))
    ids = [e.id for e in entries]
    if len(set(ids)) != len(ids):
        raise BenignCatalogError("duplicate benign ids")
    return tuple(entries)


@cache
def load_benign() -> tuple[BenignLine, ...]:
    """The built-in catalog of error-level lines that healthy runs print."""
    return parse_benign(resources.files(__package__).joinpath(BENIGN_FILE).read_text(encoding="utf-8"))
