"""``Answer``: the report of a command that answers a question rather than diagnosing a job (``list-checks``,
``explain``, ``docs``, ``profile capture``): the data as its JSON says it and the text a person reads, both made
by the command's product. It goes through the same skeleton as every report (``tpudoctor.cli.run_product``);
its ``results`` (``docs --check``'s stale pages) set the exit status as any report's do."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from tpudoctor.findings import Finding


@dataclasses.dataclass
class Answer:
    kind: ClassVar[str] = "answer"
    data: dict[str, Any]
    """The ``--format json`` output, as it is."""
    text: str
    """The ``--format text`` output."""
    results: list[Finding] = dataclasses.field(default_factory=list)
    note: str | None = None
    """Written to standard error after the answer (what to run next)."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "data": self.data, "text": self.text}
