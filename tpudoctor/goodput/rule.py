"""The goodput rule contract: one declarative class per finding, one pure ``evaluate(document)``.

A rule reads the goodput document's figures (``document["goodput"]``: buckets, restarts, saves,
compilations) and returns a ``Finding`` of kind ``goodput``: PASS when its bucket is small or the
log cannot tell (its message says which), WARN or FAIL with the fix when it is large. Thresholds are
named class data; ``examples`` (small documents with the status each must give) are the rule's tests.
Rules are found like profile rules: the built-ins in ``tpudoctor.goodput.rules`` and the
``tpudoctor.goodput_rules`` entry points.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from tpudoctor.findings import FindingKind
from tpudoctor.rule import Example, Rule

RULE_ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")




class GoodputRule(Rule[Mapping[str, Any]]):
    """Base class for every goodput rule: it reads the document's ``goodput`` section."""

    kind: ClassVar[FindingKind] = FindingKind.GOODPUT
    bucket: ClassVar[str | None] = None
    """The badput bucket the rule is about, if one."""
    examples: ClassVar[tuple[Example, ...]] = ()



def bucket_share(goodput: Mapping[str, Any], bucket: str) -> tuple[float | None, float | None]:
    """(seconds, percent of wall time) of a badput bucket, None where the log cannot tell."""
    entry = (goodput.get("badput") or {}).get(bucket) or {}
    return entry.get("seconds"), entry.get("percent")


GoodputExample = Example
"""The old name of this family's example type, for plugins written against it (construct it positionally)."""
