"""The one-word verdict of a host, derived from its rules' results, and the order findings are named in.

Precedence (short on purpose):

1. No steps measured (the ``no-step-markers`` rule found none): ``unknown``.
2. Each bottleneck (input-bound, compile-bound, host-bound, communication-bound, device-bound) scores
   the largest ``share_of_step_percent`` among the results of the rules that score it (PASS results
   included: a share below a rule's own threshold still counts).
3. The highest score wins (ties in the order above). ``device-bound`` wins with any share above 0;
   any other bottleneck only from ``BOUND_PERCENT`` of step time, else ``unknown``.

A new bottleneck (communication-bound from cross-host analysis, say) plugs in by adding a rule with
that ``bottleneck`` and ``scores_verdict = True``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tpudoctor.findings import Finding, Status
from tpudoctor.profile.rule import BOTTLENECKS, ProfileRule, share_of_step

VERDICTS = (*BOTTLENECKS, "unknown")
BOUND_PERCENT = 20.0  # a cause that takes this share of step time is "the" bottleneck
NO_STEPS_RULE = "no-step-markers"


def decide(results: list[Finding], rules: Mapping[str, type[ProfileRule]]) -> tuple[str, str]:
    """(verdict, reason) for one host from its rule results (``rules``: rule id -> class)."""
    by_id = {r.id: r for r in results}
    steps = by_id.get(NO_STEPS_RULE)
    if steps is not None and steps.evidence.get("steps") == 0:
        return "unknown", steps.message
    scores: dict[str, tuple[float, Finding | None]] = {b: (0.0, None) for b in BOTTLENECKS}
    for result in results:
        rule = rules.get(result.id)
        if rule is None or not rule.scores_verdict or rule.bottleneck not in scores:
            continue
        if result.status is Status.ERROR:
            continue
        share = share_of_step(result)
        best, best_result = scores[rule.bottleneck]
        fired_over_passed = (share == best and best_result is not None and best_result.status is Status.PASS
                             and result.status is not Status.PASS)
        if share > best or fired_over_passed:
            scores[rule.bottleneck] = (share, result)
    name, (score, result) = max(scores.items(), key=lambda kv: kv[1][0])  # first listed wins a tie
    others = ", ".join(f"{b.removesuffix('-bound')} {s:.1f}%" for b, (s, _) in scores.items() if b != name)
    if name == "device-bound" and score > 0:
        return name, f"the device computes {score:.1f}% of step time; {others}"
    if score < BOUND_PERCENT or result is None:
        return "unknown", (f"no single cause reaches {BOUND_PERCENT:.0f}%: "
                           + ", ".join(f"{b.removesuffix('-bound')} {s:.1f}%" for b, (s, _) in scores.items()))
    if result.status is Status.PASS:  # below the rule's own threshold, yet the largest cause
        return name, f"{name.removesuffix('-bound')} takes {score:.1f}% of step time; {others}"
    if "of step time" in result.title:  # the headline says the share already
        return name, result.title
    return name, f"{result.title} ({score:.1f}% of step time)"


def order_findings(findings: list[Finding], verdict: str, rules: Mapping[str, type[ProfileRule]]) -> list[Finding]:
    """The findings that explain the verdict first (by the rules' ``lead_rank``), then the rest, most
    severe first."""

    def key(f: Finding) -> tuple[int, int, int]:
        rule = rules.get(f.id)
        if rule is not None and rule.bottleneck == verdict:
            return (0, rule.lead_rank, 0)
        return (1, -f.severity.rank, -f.status.rank)

    return sorted(findings, key=key)
