"""Example facts for the log checks, built by the real diagnoser so they stay truthful.

They are built the first time a check's ``examples`` are read, not at import: every ``check`` and
``list-checks`` imports the log checks, and neither needs their examples.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tpudoctor.logdiag import Diagnoser

HEALTHY_LINES = (
    "2024-05-01 10:00:00,001 INFO trainer.py:40] step 100 loss=2.3012",
    "I0501 10:00:01.000000  4242 tpu_runtime.cc:118] Found 8 TPU v5 lite chips.",
)


def scan_with(*lines: str, source: str = "train.log") -> dict[str, Any]:
    diagnoser = Diagnoser()
    diagnoser.feed_lines(list(HEALTHY_LINES) + list(lines), source)
    return {
        "sources": [{"source": source, "lines": diagnoser.lines_scanned}],
        "lines_scanned": diagnoser.lines_scanned,
        "events_scanned": diagnoser.events_scanned,
        "catalog_version": diagnoser.catalog.version,
        "diagnoses": [d.to_dict() for d in diagnoser.diagnoses()],
    }


def healthy_scan() -> dict[str, Any]:
    return scan_with()


class built_on_first_use:  # noqa: N801 - used like a decorator-ish class attribute
    """A class attribute computed the first time it is read, then stored on the class."""

    def __init__(self, build: Callable[[], Any]):
        self._build = build
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, instance: object, owner: type) -> Any:
        value = self._build()
        setattr(owner, self._name, value)
        return value
