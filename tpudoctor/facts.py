"""Facts: what fact providers gathered once, and the markers for facts that are missing.

A check reads facts and nothing else, so it can be tested with a plain dict. A fact value may
be one of two markers instead of data:

* ``Unavailable(reason)``: the fact does not apply here (no TPU VM, no ``--tpu`` given). A check
  that needs it is SKIP with that reason.
* ``GatherError(provider, error)``: the provider crashed or timed out. A check that needs it is
  ERROR, because the check could not run; this says nothing about the user's system.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Unavailable:
    reason: str


@dataclasses.dataclass(frozen=True)
class GatherError:
    provider: str
    error: str
    timed_out: bool = False


class FactUnavailableError(Exception):
    """Raised by ``Facts.require``; the runner turns it into SKIP."""

    def __init__(self, key: str, reason: str):
        super().__init__(reason)
        self.key = key
        self.reason = reason


class FactGatherError(Exception):
    """Raised by ``Facts.require``; the runner turns it into ERROR."""

    def __init__(self, key: str, error: GatherError):
        detail = "timed out" if error.timed_out else "failed"
        super().__init__(f"fact '{key}' from provider '{error.provider}' {detail}: {error.error}")
        self.key = key
        self.gather_error = error


class Facts(Mapping[str, Any]):
    """Read-only view over gathered facts with SKIP/ERROR-aware access."""

    def __init__(self, data: Mapping[str, Any] | None = None):
        self._data = dict(data or {})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def require(self, key: str) -> Any:
        """The fact's value; SKIP the check when it does not apply, ERROR when gathering broke."""
        if key not in self._data:
            raise FactUnavailableError(key, f"fact '{key}' was not gathered")
        value = self._data[key]
        if isinstance(value, Unavailable):
            raise FactUnavailableError(key, value.reason)
        if isinstance(value, GatherError):
            raise FactGatherError(key, value)
        return value

    def value(self, key: str, default: Any = None) -> Any:
        """The fact's value, or ``default`` when it is missing, unavailable or broken."""
        value = self._data.get(key, default)
        if isinstance(value, (Unavailable, GatherError)):
            return default
        return value
