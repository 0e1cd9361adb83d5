"""Fact providers: the only place where ``check`` touches the machine or the network.

A provider declares the fact keys it fills, the facts it needs first, and a timeout. The
runner calls ``gather`` at most once per run, in a worker thread, and records a timeout or an
exception as ``GatherError`` for each of its keys, so the checks that read them become ERROR
while the rest of the run goes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts


class FactProvider:
    name: ClassVar[str] = ""
    provides: ClassVar[tuple[str, ...]] = ()
    needs: ClassVar[tuple[str, ...]] = ()
    """Fact keys this provider reads from other providers (gathered before it)."""
    timeout_s: ClassVar[float] = 10.0
    after_deadline: ClassVar[bool] = False
    """True: gathered even when the run's time is up, within ``timeout_s`` (what the report itself records)."""
    source: ClassVar[str] = "builtin"

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        """Return a value (or ``Unavailable``) for every key in ``provides``."""
        raise NotImplementedError
