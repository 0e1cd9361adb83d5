"""The goodput rule contract: one declarative class per finding, one pure ``evaluate(document)``.

A rule reads the goodput document's figures (``document["goodput"]``: buckets, restarts, saves,
compilations) and returns a ``Finding`` of kind ``goodput``: PASS when its bucket is small or the
log cannot tell (its message says which), WARN or FAIL with the fix when it is large. Thresholds are
named class data; ``examples`` (small documents with the status each must give) are the rule's tests.
Rules are found like profile rules: the built-ins in ``tpudoctor.goodput.rules`` and the
``tpudoctor.goodput_rules`` entry points.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from tpudoctor.findings import Finding, FindingKind, Remediation, Severity, Status

RULE_ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


@dataclasses.dataclass(frozen=True)
class GoodputExample:
    name: str
    goodput: Mapping[str, Any]
    """The ``goodput`` section (only the keys the rule reads)."""
    status: Status


class GoodputRule:
    id: ClassVar[str] = ""
    title: ClassVar[str] = ""
    bucket: ClassVar[str | None] = None
    """The badput bucket the rule is about, if one."""
    docs: ClassVar[str] = ""
    examples: ClassVar[tuple[GoodputExample, ...]] = ()
    source: ClassVar[str] = "builtin"

    def evaluate(self, goodput: Mapping[str, Any]) -> Finding:
        raise NotImplementedError

    @classmethod
    def description(cls) -> str:
        return (cls.__doc__ or "").strip()

    def passed(self, message: str, *, evidence: Mapping[str, Any] | None = None) -> Finding:
        return Finding(id=self.id, step=None, title=self.title, status=Status.PASS, message=message,
                       severity=Severity.INFO, evidence=dict(evidence or {}), kind=FindingKind.GOODPUT)

    def fired(self, severity: Severity, title: str, message: str, *, evidence: Mapping[str, Any],
              fixes: Iterable[str], commands: Iterable[str] = ()) -> Finding:
        status = Status.FAIL if severity.rank >= Severity.HIGH.rank else Status.WARN
        return Finding(id=self.id, step=None, title=title, status=status, message=message, severity=severity,
                       evidence=dict(evidence), kind=FindingKind.GOODPUT,
                       remediation=Remediation(text="\n".join(fixes), commands=tuple(commands),
                                               docs_url=self.docs or None))


def bucket_share(goodput: Mapping[str, Any], bucket: str) -> tuple[float | None, float | None]:
    """(seconds, percent of wall time) of a badput bucket, None where the log cannot tell."""
    entry = (goodput.get("badput") or {}).get(bucket) or {}
    return entry.get("seconds"), entry.get("percent")


def evaluate_rule(rule: type[GoodputRule] | GoodputRule, goodput: Mapping[str, Any]) -> Finding:
    """One rule on one document's figures; a crashing rule is an ERROR result, the others still run."""
    instance = rule() if isinstance(rule, type) else rule
    try:
        finding = instance.evaluate(goodput)
        if not isinstance(finding, Finding):
            raise TypeError(f"evaluate returned {type(finding).__name__}, not a Finding")
    except Exception as exc:  # noqa: BLE001 - one broken rule must not take the report down
        finding = Finding(id=instance.id, step=None, title=instance.title or instance.id, status=Status.ERROR,
                          message=f"rule {instance.id} crashed: {type(exc).__name__}: {exc}",
                          severity=Severity.MEDIUM, kind=FindingKind.GOODPUT)
    return finding
