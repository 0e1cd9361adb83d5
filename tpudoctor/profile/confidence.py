"""How sure each profile finding and verdict is, and why: from the evidence each one rests on.

Each kind of evidence a rule can read (``rule.EVIDENCE_KINDS``) has a strength on one host:

* ``steps``/``step-breakdown``: ``high`` with real step markers (device ``Steps`` line or host step
  annotations), at least ``MIN_STEPS`` steps spanning at least ``STRONG_STEP_COVERAGE_PERCENT`` of
  the window; ``medium`` with markers over less of the window, or with pseudo-steps (runs of one
  program, a guess) that pass the loop check and span that much; ``low`` below the named minimum
  (``analysis.evidence``) or pseudo-steps over less; ``unknown`` with no steps or no training loop;
* ``device-ops``: ``high`` from ``MIN_DEVICE_TIME_MS`` of device op time, ``low`` below, ``unknown``
  with none;
* ``host-ops``, ``compile-events``: ``high`` where the capture has a host plane (the events are
  direct observations), else ``unknown``; ``window``: ``high`` where it has timed events;
* ``other-hosts``: ``high`` where the cross-host analysis ran on this host, else ``unknown``.

A finding is as sure as the weakest evidence its severity rests on (``ProfileRule.confidence_from``,
by default everything it ``needs``). A verdict is as sure as the finding that decides it, one
level lower where the evidence disagrees: the runner-up cause within ``CLOSE_CALL_POINTS``, or the
verdict's part the largest in fewer than ``STEP_AGREEMENT_PERCENT`` of the steps. Only ``high``
findings keep a HIGH or CRITICAL severity (``verdict.cap_findings``). A hand-built result (no
measured evidence) is ``unknown`` and not capped, as the evidence guard does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from tpudoctor.findings import Confidence, ConfidenceLevel, Finding
from tpudoctor.profile.analysis.evidence import (
    MIN_DEVICE_TIME_MS,
    MIN_STEP_COVERAGE_PERCENT,
    MIN_STEPS,
    STRONG_STEP_COVERAGE_PERCENT,
)
from tpudoctor.profile.host_result import HostResult

HIGH, MEDIUM, LOW, UNKNOWN = (ConfidenceLevel.HIGH, ConfidenceLevel.MEDIUM, ConfidenceLevel.LOW,
                              ConfidenceLevel.UNKNOWN)
MARKER_METHODS = ("device-steps-line", "host-step-annotations")
PSEUDO_METHODS = ("pseudo-steps-xla-modules", "pseudo-steps-host-program-runs")
HOST_PLANE = "/host:CPU"
CLOSE_CALL_POINTS = 10.0
"""A verdict whose runner-up cause is within this many points of step time is a close call."""
STEP_AGREEMENT_PERCENT = 60.0
"""A verdict's part should be the largest part in at least this share of the steps."""
# Which parts of a step each verdict is about (``BreakdownFigures.per_step`` columns).
VERDICT_PARTS = {
    "input-bound": ("input_ms",),
    "compile-bound": ("compile_ms",),
    "host-bound": ("idle_ms", "host_callback_ms", "host_offload_ms", "host_transfer_ms", "outfeed_ms", "other_ms"),
    "communication-bound": ("collective_ms",),
    "device-bound": ("compute_ms",),
}


@dataclasses.dataclass(frozen=True)
class Strength:
    level: ConfidenceLevel
    reason: str


def step_source(host: HostResult) -> str:
    """markers, pseudo-steps, micro-benchmark or none."""
    if host.steps.micro_benchmark:
        return "micro-benchmark"
    if host.steps.method in MARKER_METHODS and host.steps.count:
        return "markers"
    if host.steps.method in PSEUDO_METHODS and host.steps.count:
        return "pseudo-steps"
    return "none"


def basis(host: HostResult) -> dict:
    """The figures every confidence of this host is judged by."""
    ev = host.evidence
    return {"step_source": step_source(host), "step_method": host.steps.method,
            "steps": host.steps.count if ev is None else ev.steps,
            "step_coverage_percent": None if ev is None else round(ev.step_coverage_percent, 2),
            "device_time_ms": None if ev is None else round(ev.device_time_ms, 3)}


def strengths(host: HostResult) -> dict[str, Strength]:
    """The strength of each kind of evidence on this host."""
    ev = host.evidence
    if ev is None:
        missing = Strength(UNKNOWN, "the evidence was not measured (a hand-built result)")
        return {k: missing for k in ("steps", "step-breakdown", "device-ops", "host-ops", "compile-events",
                                     "window", "other-hosts")}
    steps = _step_strength(host)
    if ev.device_time_ms >= MIN_DEVICE_TIME_MS:
        device = Strength(HIGH, f"{ev.device_time_ms:.4g} ms of device op time")
    elif ev.device_time_ms > 0:
        device = Strength(LOW, f"only {ev.device_time_ms:.3g} ms of device op time (strong from {MIN_DEVICE_TIME_MS:g} ms)")
    else:
        device = Strength(UNKNOWN, "no device op time in the capture")
    has_host = HOST_PLANE in host.plane_names or not host.plane_names
    host_events = (Strength(HIGH, "host events observed directly") if has_host
                   else Strength(UNKNOWN, f"no {HOST_PLANE} plane in the capture"))
    window = (Strength(HIGH, f"a {ev.window_ms:.4g} ms capture window") if ev.window_ms > 0
              else Strength(UNKNOWN, "no timed event in the capture"))
    others = (Strength(HIGH, "the cross-host analysis compared this host with the others")
              if host.tables.get("cross_host") else Strength(UNKNOWN, "no other host to compare with"))
    return {"steps": steps, "step-breakdown": steps, "device-ops": device, "host-ops": host_events,
            "compile-events": host_events, "window": window, "other-hosts": others}


def _step_strength(host: HostResult) -> Strength:
    ev = host.evidence
    source = step_source(host)
    if source == "micro-benchmark":
        return Strength(UNKNOWN, "no training loop (a micro-benchmark): there are no steps to judge")
    if source == "none":
        return Strength(UNKNOWN, "no steps found")
    what = (f"{ev.steps} steps from step markers ({host.steps.method})" if source == "markers"
            else f"{ev.steps} pseudo-steps (runs of {host.steps.program}, no step markers)")
    spans = f"spanning {ev.step_coverage_percent:.0f}% of the window"
    if ev.steps < MIN_STEPS or ev.step_coverage_percent < MIN_STEP_COVERAGE_PERCENT:
        return Strength(LOW, f"{what} {spans}: below the minimum ({MIN_STEPS} steps, "
                             f"{MIN_STEP_COVERAGE_PERCENT:.0f}% of the window)")
    if source == "markers":
        if ev.step_coverage_percent >= STRONG_STEP_COVERAGE_PERCENT:
            return Strength(HIGH, f"{what} {spans}")
        return Strength(MEDIUM, f"{what} {spans} (strong from {STRONG_STEP_COVERAGE_PERCENT:.0f}%)")
    if ev.step_coverage_percent >= STRONG_STEP_COVERAGE_PERCENT:
        return Strength(MEDIUM, f"{what} {spans}: step boundaries are a guess")
    return Strength(LOW, f"{what} {spans}: step boundaries are a guess over little of the window")


def finding_confidence(finding: Finding, rule: type | None, host: HostResult,
                       by_kind: Mapping[str, Strength] | None = None) -> Confidence:
    """As sure as the weakest evidence the finding's severity rests on."""
    by_kind = strengths(host) if by_kind is None else by_kind
    kinds = _kinds_of(rule)
    if not kinds:
        return Confidence(UNKNOWN, ("the rule states no evidence it reads",), {**basis(host), "evidence": []})
    return _weakest(kinds, by_kind, basis(host))


def _weakest(kinds: Iterable[str], by_kind: Mapping[str, Strength], figures: dict) -> Confidence:
    """The weakest of these kinds of evidence, with one reason per distinct strength."""
    kinds = list(dict.fromkeys(kinds))
    got = {k: by_kind.get(k, Strength(UNKNOWN, f"no {k} in the capture")) for k in kinds}
    level = min((s.level for s in got.values()), key=lambda lv: lv.rank)
    grouped: dict[str, list[str]] = {}
    for kind, strength in got.items():
        grouped.setdefault(strength.reason, []).append(kind)
    reasons = tuple(f"{', '.join(ks)}: {reason}" for reason, ks in grouped.items())
    return Confidence(level, reasons, {**figures, "evidence": kinds})


def _kinds_of(rule: type | None) -> tuple[str, ...]:
    if rule is None:
        return ()
    return tuple(getattr(rule, "confidence_from", None) or getattr(rule, "needs", ()) or ())


def verdict_confidence(verdict: str, reason: str, results: Iterable[Finding], host: HostResult,
                       rules: Mapping[str, type]) -> Confidence:
    """How sure the verdict is: ``unknown`` for an ``unknown`` verdict; else the deciding finding's
    confidence, one level lower where the evidence disagrees (a close runner-up, or steps whose
    largest part is another)."""
    results = list(results)
    figures = basis(host)
    if verdict == "unknown":
        steps = strengths(host)["steps"]
        return Confidence(UNKNOWN, ("no verdict, so nothing to be sure of", f"steps: {steps.reason}"), figures)
    scored = _scores(results, rules)
    deciding = scored.get(verdict, (0.0, None))[1]
    if deciding is None or deciding.confidence is None:
        return Confidence(UNKNOWN, ("no finding decides this verdict",), figures)
    # A verdict is about step time (compile-bound: about the window, as the evidence guard has it),
    # whatever the deciding finding's own severity rests on.
    kinds = [*deciding.confidence.basis.get("evidence", []),
             *(() if verdict == "compile-bound" else ("steps", "step-breakdown"))]
    base = _weakest(kinds, strengths(host), figures)
    level = min(base.level, deciding.confidence.level, key=lambda lv: lv.rank)
    reasons = list(base.reasons)
    mine = scored[verdict][0]
    others = sorted(((s, b) for b, (s, _) in scored.items() if b != verdict), reverse=True)
    runner_up, runner_name = others[0] if others else (0.0, None)
    margin = mine - runner_up
    figures.update({"score_percent": round(mine, 2), "runner_up": runner_name,
                    "runner_up_percent": round(runner_up, 2)})
    if runner_name is not None and margin < CLOSE_CALL_POINTS:
        level = level.lowered()
        reasons.append(f"close call: {verdict} {mine:.1f}% of step time against {runner_name} {runner_up:.1f}%")
    agree = step_agreement(host, verdict)
    if agree is not None:
        agreeing, total = agree
        figures.update({"steps_agreeing": agreeing, "steps_compared": total})
        if total and 100 * agreeing / total < STEP_AGREEMENT_PERCENT:
            level = level.lowered()
            reasons.append(f"the steps disagree: {verdict.removesuffix('-bound')} is the largest part in only "
                           f"{agreeing} of {total} steps")
        elif total:
            reasons.append(f"the steps agree: {verdict.removesuffix('-bound')} is the largest part in "
                           f"{agreeing} of {total} steps")
    return Confidence(level, tuple(reasons), figures)


def _scores(results: list[Finding], rules: Mapping[str, type]) -> dict[str, tuple[float, Finding | None]]:
    """Each bottleneck's score (largest share of step time among its rules) and the result that gave it."""
    from tpudoctor.findings import Status
    from tpudoctor.profile.rule import BOTTLENECKS, share_of_step

    scores: dict[str, tuple[float, Finding | None]] = {b: (0.0, None) for b in BOTTLENECKS}
    for r in results:
        rule = rules.get(r.id)
        if rule is None or not getattr(rule, "scores_verdict", False) or rule.bottleneck not in scores:
            continue
        if r.status is Status.ERROR:
            continue
        share = share_of_step(r)
        if share > scores[rule.bottleneck][0] or scores[rule.bottleneck][1] is None:
            scores[rule.bottleneck] = (max(share, scores[rule.bottleneck][0]), r)
    return scores


def step_agreement(host: HostResult, verdict: str) -> tuple[int, int] | None:
    """(steps whose largest part group is the verdict's, steps compared); None without per-step parts."""
    mine = VERDICT_PARTS.get(verdict)
    steps = host.breakdown.per_step
    if mine is None or not steps:
        return None
    agreeing = 0
    for step in steps:
        totals = {v: sum(float(step.get(c) or 0.0) for c in cols) for v, cols in VERDICT_PARTS.items()}
        if totals[verdict] > 0 and totals[verdict] >= max(totals.values()):
            agreeing += 1
    return agreeing, len(steps)


def with_confidence(results: Iterable[Finding], host: HostResult, rules: Mapping[str, type]) -> list[Finding]:
    """Every result with its confidence."""
    by_kind = strengths(host)
    return [dataclasses.replace(r, confidence=finding_confidence(r, rules.get(r.id), host, by_kind)) for r in results]
