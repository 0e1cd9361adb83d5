"""The profile rule contract: one declarative class per finding, one pure ``evaluate(host)`` method.

A rule is to a profile what a check is to a node: it reads one host's ``HostResult`` (figures, no
events), and returns a ``Finding`` of kind ``profile``: PASS when it does not fire, WARN or FAIL
(FAIL for a high-severity cause, the one that makes a job slow) when it does, with evidence and a
remediation. Thresholds are named class data. ``examples`` (small ``HostResult`` instances with the
status each must give) double as the rule's tests and docs; the conformance test runs them.

Ids are lowercase slugs (``input-bound``, ``host-offload``): the names profile findings have had
since the first report, so saved reports and ``compare`` keep matching them; check ids look like
``NODE-001``, so the two namespaces never clash. Third-party rules use their own prefix
(``acme-...``).

Rules that say how much of the step time their cause takes put it in ``evidence`` as
``share_of_step_percent`` (also when they PASS) and name the ``bottleneck`` it points at; the
verdict is derived from those (``tpudoctor.profile.verdict``).
"""

from __future__ import annotations

import re
from typing import ClassVar

from tpudoctor.findings import Finding, FindingKind, Scope
from tpudoctor.profile.host_result import HostResult
from tpudoctor.rule import Example, Rule
from tpudoctor.rule import evaluate_rule as evaluate_one

RULE_ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
SHARE_OF_STEP = "share_of_step_percent"
EVIDENCE_KINDS = {
    "steps": "training steps (from step markers or repeated program runs)",
    "step-breakdown": "each step's time split into compute, input, idle, compile and host parts (needs steps)",
    "device-ops": "device op events (TPU/GPU device planes, or XLA ops on the host for CPU)",
    "host-ops": "host-side op events (callbacks, host transfers, eager ops)",
    "compile-events": "compilation events inside the capture window",
    "window": "the capture window: first to last timed event",
    "other-hosts": "the other hosts of the run, with collectives in their steps (cross-host analysis)",
}
"""What a rule can need from a capture (``ProfileRule.needs``); the minimum amounts the verdict needs
are in ``tpudoctor.profile.analysis.evidence``."""
BOTTLENECKS = ("input-bound", "compile-bound", "host-bound", "communication-bound", "device-bound")




class ProfileRule(Rule[HostResult]):
    """Base class for every profile rule. Subclasses set the metadata and implement ``evaluate``."""

    kind: ClassVar[FindingKind] = FindingKind.PROFILE
    bottleneck: ClassVar[str | None] = None
    """The verdict this rule's finding explains (one of ``BOTTLENECKS``), or None."""
    scores_verdict: ClassVar[bool] = False
    """True when its ``share_of_step_percent`` counts toward its bottleneck's score."""
    needs: ClassVar[tuple[str, ...]] = ()
    """The evidence the rule reads (``EVIDENCE_KINDS``); stated in every report's ``rules`` list."""
    confidence_from: ClassVar[tuple[str, ...]] = ()
    """The evidence its finding's severity rests on, where that is less than ``needs`` (a share of
    device time needs no steps); its confidence is the weakest of these (``profile.confidence``)."""
    lead_rank: ClassVar[int] = 100
    """Among the findings that explain the verdict, lower ranks are named first (specific causes
    before generic ones)."""
    examples: ClassVar[tuple[Example, ...]] = ()



def evaluate_rule(rule: type[ProfileRule] | ProfileRule, host: HostResult) -> Finding:
    """One rule on one host, its scope set to that host; a crashing rule is an ERROR result."""
    finding = evaluate_one(rule, host)
    finding.scope = Scope.of(hosts=[host.host])
    return finding


def share_of_step(finding: Finding) -> float:
    value = finding.evidence.get(SHARE_OF_STEP)
    return float(value) if isinstance(value, (int, float)) else 0.0


def fixes_of(finding: Finding) -> list[str]:
    """The remediation's fixes, one per line."""
    if finding.remediation is None or not finding.remediation.text:
        return []
    return [line for line in finding.remediation.text.splitlines() if line.strip()]


RuleExample = Example
"""The old name of this family's example type, for plugins written against it (construct it positionally)."""
