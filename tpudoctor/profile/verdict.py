"""The one-word verdict of a host, derived from its rules' results, and the order findings are named in.

Precedence (short on purpose):

0. No training loop (the ``micro-benchmark`` rule fired): ``unknown``, "micro-benchmark: no
   training loop" and why; no step-time verdict applies to programs timed one by one.
1. No steps measured (the ``no-step-markers`` rule found none): ``unknown``.
2. Each bottleneck (input-bound, compile-bound, host-bound, communication-bound, device-bound) scores
   the largest ``share_of_step_percent`` among the results of the rules that score it (PASS results
   included: a share below a rule's own threshold still counts).
3. The highest score wins (ties in the order above). ``device-bound`` wins with any share above 0;
   any other bottleneck only from ``BOUND_PERCENT`` of step time, else ``unknown``.
4. Evidence guard: the ``insufficient-evidence`` rule's figures are checked for the winner (steps and
   step coverage for every verdict but compile-bound, device time for device-bound; the named
   minimum is ``tpudoctor.profile.analysis.evidence.MinimumEvidence``). Below it the verdict is
   ``unknown`` with the reason (after 1, the no-steps reason stays), and ``cap_findings`` lowers
   every HIGH/CRITICAL result to MEDIUM: too little evidence never yields a HIGH finding.
5. Confidence (``tpudoctor.profile.confidence``): each result says how sure it is and why; one that
   is not ``high`` (pseudo-steps, thin coverage, little device time) is not HIGH either.

A new bottleneck (communication-bound from cross-host analysis, say) plugs in by adding a rule with
that ``bottleneck`` and ``scores_verdict = True``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from tpudoctor.findings import ConfidenceLevel, Finding, Severity, Status
from tpudoctor.profile.rule import BOTTLENECKS, ProfileRule, share_of_step

VERDICTS = (*BOTTLENECKS, "unknown")
BOUND_PERCENT = 20.0  # a cause that takes this share of step time is "the" bottleneck
NO_STEPS_RULE = "no-step-markers"
MICRO_BENCHMARK_RULE = "micro-benchmark"


EVIDENCE_RULE = "insufficient-evidence"
NOT_ENOUGH = "Not enough evidence to judge: "


@dataclasses.dataclass(frozen=True)
class Judgement:
    verdict: str
    reason: str
    enough_evidence: bool = True


def decide(results: list[Finding], rules: Mapping[str, type[ProfileRule]]) -> tuple[str, str]:
    """(verdict, reason) for one host from its rule results (``rules``: rule id -> class)."""
    j = judge(results, rules)
    return j.verdict, j.reason


def judge(results: list[Finding], rules: Mapping[str, type[ProfileRule]]) -> Judgement:
    """The verdict, its reason and whether the capture holds enough evidence for it."""
    verdict, reason = _bottleneck(results, rules)
    check = evidence_check(results, verdict)
    enough = check is None or check.enough
    if _micro_benchmark(results) is not None:  # no loop: nothing about steps is strong evidence
        return Judgement(verdict, reason, enough_evidence=False)
    if _no_steps(results):  # rule 1 keeps its own reason ("cannot tell"); findings are capped all the same
        return Judgement(verdict, reason, enough_evidence=enough)
    if not enough:
        return Judgement("unknown", NOT_ENOUGH + check.reason, enough_evidence=False)
    return Judgement(verdict, reason)


def _no_steps(results: list[Finding]) -> bool:
    steps = next((r for r in results if r.id == NO_STEPS_RULE), None)
    return steps is not None and steps.evidence.get("steps") == 0


def evidence_check(results: list[Finding], verdict: str | None):
    """The evidence check of the ``insufficient-evidence`` rule's figures for ``verdict``; None
    where the rule did not measure any (a hand-built result, or the rule is not installed)."""
    from tpudoctor.profile.analysis.evidence import check_evidence, evidence_from_dict

    result = next((r for r in results if r.id == EVIDENCE_RULE), None)
    figures = result.evidence.get("evidence") if result is not None else None
    if not isinstance(figures, dict):
        return None
    return check_evidence(evidence_from_dict(figures), verdict=verdict if verdict in BOTTLENECKS else None)


def cap_findings(results: list[Finding], *, only_unsure: bool = False) -> list[Finding]:
    """No result claims more than its evidence holds: HIGH/CRITICAL become MEDIUM (FAIL becomes
    WARN), the original severity kept in the evidence. Every result below the minimum evidence;
    with ``only_unsure``, those whose confidence is measured and not ``high``."""
    out = []
    for r in results:
        unsure = r.confidence is not None and r.confidence.level is not ConfidenceLevel.HIGH
        if only_unsure and not unsure:
            out.append(r)
            continue
        if r.severity.rank >= Severity.HIGH.rank and r.status in (Status.FAIL, Status.WARN):
            r = dataclasses.replace(r, severity=Severity.MEDIUM, status=Status.WARN,
                                    evidence={**r.evidence, "severity_before_evidence_cap": r.severity.value})
        out.append(r)
    return out


def _micro_benchmark(results: list[Finding]) -> Finding | None:
    return next((r for r in results if r.id == MICRO_BENCHMARK_RULE and r.status is not Status.PASS), None)


def _bottleneck(results: list[Finding], rules: Mapping[str, type[ProfileRule]]) -> tuple[str, str]:
    micro = _micro_benchmark(results)
    if micro is not None:
        return "unknown", str(micro.evidence.get("reason") or micro.message)
    if _no_steps(results):
        return "unknown", next(r for r in results if r.id == NO_STEPS_RULE).message
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
        if f.id in (MICRO_BENCHMARK_RULE, EVIDENCE_RULE) and verdict == "unknown":  # why there is no verdict comes first
            return (-1, 0, 0)
        rule = rules.get(f.id)
        if rule is not None and rule.bottleneck == verdict:
            return (0, rule.lead_rank, 0)
        return (1, -f.severity.rank, -f.status.rank)

    return sorted(findings, key=key)
