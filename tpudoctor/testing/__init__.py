"""Helpers for check authors, built-in and third-party.

>>> from tpudoctor.testing import run_check, assert_status
>>> result = run_check(MyCheck, {"python.version": "3.11.7"})
>>> assert_status(result, "PASS")

``conformance_problems(cls)`` lists what a check class gets wrong (metadata, docs, examples);
the built-in suite runs it over every registered check, plugins included.
``profile_rule_conformance_problems(cls)`` does the same for a profile rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.check import CHECK_ID_PATTERN, Check
from tpudoctor.facts import Facts, GatherError
from tpudoctor.findings import CheckResult, Status, Step


def run_check(check: type[Check] | Check, facts: Mapping[str, Any]) -> CheckResult:
    """Evaluate one check on a facts dict, exactly as the runner would (SKIP/ERROR included)."""
    from tpudoctor.runner import evaluate_check

    instance = check() if isinstance(check, type) else check
    return evaluate_check(instance, facts if isinstance(facts, Facts) else Facts(facts))


def assert_status(result: CheckResult, status: Status | str) -> None:
    wanted = Status(status)
    if result.status is not wanted:
        raise AssertionError(
            f"{result.id}: expected {wanted.value}, got {result.status.value}: {result.message}"
            f" (evidence: {result.evidence})"
        )


def conformance_problems(cls: type[Check], known_facts: set[str] | None = None) -> list[str]:
    """Everything wrong with a check class; an empty list means it conforms."""
    problems: list[str] = []
    name = cls.__qualname__
    if not CHECK_ID_PATTERN.match(cls.id or ""):
        problems.append(f"{name}: id {cls.id!r} must look like STEP-001")
    if not cls.title:
        problems.append(f"{name}: title is empty")
    if not isinstance(getattr(cls, "step", None), Step):
        problems.append(f"{name}: step must be a tpudoctor.findings.Step")
    if not cls.description():
        problems.append(f"{name}: needs a docstring saying what it checks")
    if not cls.docs or not cls.docs.startswith("https://"):
        problems.append(f"{name}: docs must be an https:// link")
    if not (0 < cls.timeout_s <= 600):
        problems.append(f"{name}: timeout_s must be in (0, 600]")
    if not cls.facts:
        problems.append(f"{name}: declares no facts; a check must judge gathered facts")
    if known_facts is not None:
        for key in cls.facts:
            if key not in known_facts:
                problems.append(f"{name}: reads fact '{key}' that no provider fills")
    statuses = {ex.status for ex in cls.examples}
    if Status.PASS not in statuses:
        problems.append(f"{name}: needs at least one PASS example")
    # ERROR counts where the check itself says a verdict is unknown (a worker's report could not be read),
    # on facts that gathered fine: not an ERROR any check gives on a broken fact.
    unknown_on_good_facts = any(ex.status is Status.ERROR and not any(isinstance(v, GatherError)
                                                                        for v in ex.input.values())
                                for ex in cls.examples)
    if not statuses & {Status.FAIL, Status.WARN} and not unknown_on_good_facts:
        problems.append(f"{name}: needs at least one FAIL or WARN example (a check that cannot fail is a defect)")
    for ex in cls.examples:
        result = run_check(cls, ex.input)
        if result.status is not ex.status:
            problems.append(
                f"{name}: example '{ex.name}' expected {ex.status.value if ex.status else None}, got {result.status.value}: {result.message}"
            )
        elif result.status in (Status.FAIL, Status.WARN, Status.ERROR) and ex.status is not Status.ERROR \
                and result.remediation is None:
            problems.append(f"{name}: example '{ex.name}' gives {result.status.value} without a remediation")
    return problems


def profile_rule_conformance_problems(cls) -> list[str]:
    """Everything wrong with a profile rule class (``tpudoctor.profile.rule.ProfileRule``); empty
    means it conforms. Runs its examples."""
    from tpudoctor.findings import FindingKind
    from tpudoctor.profile.rule import (
        BOTTLENECKS,
        EVIDENCE_KINDS,
        RULE_ID_PATTERN,
        SHARE_OF_STEP,
        evaluate_rule,
    )

    problems: list[str] = []
    name = cls.__qualname__
    if not RULE_ID_PATTERN.match(cls.id or ""):
        problems.append(f"{name}: id {cls.id!r} must be lowercase words joined by '-' (e.g. input-bound)")
    if not cls.title:
        problems.append(f"{name}: title is empty")
    if not cls.description():
        problems.append(f"{name}: needs a docstring saying what it finds")
    if not cls.docs or not cls.docs.startswith("https://"):
        problems.append(f"{name}: docs must be an https:// link")
    if cls.bottleneck is not None and cls.bottleneck not in BOTTLENECKS:
        problems.append(f"{name}: bottleneck {cls.bottleneck!r} is not one of {', '.join(BOTTLENECKS)}")
    if cls.scores_verdict and cls.bottleneck is None:
        problems.append(f"{name}: scores_verdict needs a bottleneck")
    unknown = [n for n in getattr(cls, "needs", ()) if n not in EVIDENCE_KINDS]
    if unknown:
        problems.append(f"{name}: needs names unknown evidence {unknown}; known: {', '.join(EVIDENCE_KINDS)}")
    statuses = {ex.status for ex in cls.examples}
    if Status.PASS not in statuses:
        problems.append(f"{name}: needs at least one PASS example")
    if not statuses & {Status.FAIL, Status.WARN}:
        problems.append(f"{name}: needs at least one FAIL or WARN example (a rule that cannot fire is a defect)")
    for ex in cls.examples:
        result = evaluate_rule(cls, ex.input)
        if result.status is not ex.status:
            problems.append(f"{name}: example '{ex.name}' expected {ex.status.value}, got {result.status.value}: "
                            f"{result.message}")
            continue
        if result.kind is not FindingKind.PROFILE or result.id != cls.id or result.step is not None:
            problems.append(f"{name}: example '{ex.name}' gives a finding that is not this rule's profile finding")
        if list(result.scope.hosts) != [ex.input.host]:
            problems.append(f"{name}: example '{ex.name}' finding's scope is not its host")
        if result.status in (Status.FAIL, Status.WARN) and (result.remediation is None or not result.remediation.text):
            problems.append(f"{name}: example '{ex.name}' gives {result.status.value} without a remediation")
        if result.status in (Status.FAIL, Status.WARN) and not result.evidence:
            problems.append(f"{name}: example '{ex.name}' gives {result.status.value} without evidence")
        if cls.scores_verdict and not isinstance(result.evidence.get(SHARE_OF_STEP), (int, float)):
            problems.append(f"{name}: example '{ex.name}' scores the verdict but has no {SHARE_OF_STEP} evidence")
    return problems
