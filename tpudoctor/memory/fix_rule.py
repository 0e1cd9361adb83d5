"""The memory fix rule contract: one declarative class per fix, one pure ``evaluate(MemoryPlanInput)``.

A rule reads one program's buffer plan and its attribution and says how many bytes of the peak one fix saves
(``saving``), how sure it is, and why. ``evaluate`` turns that into a ``Finding``: WARN (FAIL where the caller
gives the memory capacity, the program does not fit, and this fix alone makes it fit) when the saving is at
least ``MIN_SAVING_FRACTION`` of the peak; PASS otherwise; PASS with confidence ``unknown`` (and what would tell)
when the input cannot tell. Every finding's evidence carries ``saving_bytes``, ``confidence`` (high / medium /
low / unknown) and ``confidence_why``; the finding's ``confidence`` says the same.

Fixes are ranked (``rank_fixes``) by expected saving: ``saving_bytes`` times
``CONFIDENCE_WEIGHT`` of its confidence, then fixes that keep the numerics (donation, rematerialisation) before
those that change them (bf16, a smaller batch).

Rules are found like every family's (``tpudoctor.plugins``): the built-ins in ``tpudoctor.memory.rules`` and the
shared ``tpudoctor`` entry-point group (old alias group ``tpudoctor.memory_rules``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from typing import Any, ClassVar

from tpudoctor.captures.buffer_plan import ProgramPlan
from tpudoctor.findings import Confidence, ConfidenceLevel, Finding, FindingKind, Severity, Status
from tpudoctor.memory.attribution import Attribution, attribute
from tpudoctor.rule import Example, Rule
from tpudoctor.units import format_bytes

FINDING_KIND = FindingKind.MEMORY
"""The kind of every memory finding (one constant: the rules, the placeholder and the tests read it)."""

RULE_ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")

CONFIDENCE_WEIGHT = {"high": 1.0, "medium": 0.7, "low": 0.4, "unknown": 0.0}
"""How much of a predicted saving the ranking counts, by confidence."""

MIN_SAVING_FRACTION = 0.02
"""A fix saving less than this share of the peak passes (worth no one's time)."""


@dataclasses.dataclass(frozen=True)
class MemoryPlanInput:
    """What a memory rule judges: one program's plan and its attribution, and what the caller knows besides."""

    plan: ProgramPlan
    attribution: Attribution | None = None
    """Computed from ``plan`` (and the figures below) when not given."""
    mesh: Mapping[str, int] | None = None
    """The device mesh, axis name -> size (``{"data": 8, "model": 4}``), where the caller knows it."""
    batch_size: int | None = None
    """The per-device batch size, where the caller knows it (else the batch rule infers it, less sure)."""
    optimizer_parameters: Collection[int] = ()
    """Parameter numbers holding optimizer state (beyond those their names tell)."""
    capacity_bytes: int | None = None
    """The device's memory (HBM) size, where known."""
    reserved_bytes: int | None = None
    in_use_bytes: int | None = None
    """The runtime allocator's figures at the memory peak (from the capture's memory events)."""

    def __post_init__(self) -> None:
        if self.attribution is None:
            object.__setattr__(self, "attribution", attribute(
                self.plan, optimizer_parameters=self.optimizer_parameters, reserved_bytes=self.reserved_bytes,
                in_use_bytes=self.in_use_bytes))

    @property
    def attributed(self) -> Attribution:
        """The attribution the rules read: the one given, else the one ``__post_init__`` computed (never None)."""
        if self.attribution is None:
            raise AssertionError("MemoryPlanInput.__post_init__ computes the attribution")
        return self.attribution

    @property
    def peak_bytes(self) -> int:
        return self.plan.peak_bytes

    @property
    def devices(self) -> int | None:
        """Devices the program runs on: the module's partitions x replicas, else the caller's mesh; None where
        neither tells."""
        if self.plan.partitions * self.plan.replicas > 1:
            return self.plan.partitions * self.plan.replicas
        if self.mesh:
            product = 1
            for size in self.mesh.values():
                product *= int(size)
            return product
        return None


@dataclasses.dataclass(frozen=True)
class Saving:
    """What one fix would save: bytes of the peak, how sure (high / medium / low / unknown) and why."""

    bytes: int
    confidence: str
    why: str
    what: str = ""
    """One line: what to change (the finding's title names the fix)."""
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    fixes: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()

    @classmethod
    def unknown(cls, why: str) -> Saving:
        """The input cannot tell; ``why`` says what would."""
        return cls(0, "unknown", why)




class MemoryRule(Rule[MemoryPlanInput]):
    """Base class of every memory fix rule."""

    kind: ClassVar[FindingKind] = FINDING_KIND
    fix: ClassVar[str] = ""
    """The fix in a few words (``donate buffers``)."""
    keeps_numerics: ClassVar[bool] = True
    """False for a fix that changes what the program computes (bf16, a smaller batch)."""
    examples: ClassVar[tuple[Example, ...]] = ()

    def saving(self, subject: MemoryPlanInput) -> Saving:
        raise NotImplementedError

    @classmethod
    def example_problem(cls, example: Example) -> str | None:
        problem = super().example_problem(example)
        if problem or example.saving_bytes is None:
            return problem
        finding = cls().evaluate(example.input)
        got = finding.evidence.get("saving_bytes")
        if got != example.saving_bytes:
            return f"{cls.id}: example {example.name!r} predicted {got} bytes saved, not {example.saving_bytes}"
        return None

    def evaluate(self, subject: MemoryPlanInput) -> Finding:
        saving = self.saving(subject)
        peak = subject.peak_bytes
        percent = 100.0 * saving.bytes / peak if peak else 0.0
        evidence: dict[str, Any] = {
            "program": subject.plan.event_name, "fix": self.fix, "saving_bytes": int(saving.bytes),
            "saving_percent_of_peak": round(percent, 2), "peak_bytes": peak, "confidence": saving.confidence,
            "confidence_why": saving.why, "keeps_numerics": self.keeps_numerics, **dict(saving.details)}
        if saving.confidence == "unknown":
            finding = self.passed(f"cannot tell what {self.fix} would save: {saving.why}", evidence=evidence)
        elif saving.bytes <= 0:
            finding = self.passed(f"{self.fix}: nothing to save ({saving.why})", evidence=evidence)
        elif saving.bytes < MIN_SAVING_FRACTION * peak:
            finding = self.passed(f"{self.fix} would save {format_bytes(saving.bytes)} ({percent:.1f}% of the "
                                  f"{format_bytes(peak)} peak): not worth it", evidence=evidence)
        else:
            severity = Severity.MEDIUM if percent >= 10 else Severity.LOW
            capacity = subject.capacity_bytes
            if capacity is not None and peak > capacity:
                evidence["over_capacity_bytes"] = peak - capacity
                if peak - saving.bytes <= capacity:
                    severity = Severity.HIGH
            message = (f"{saving.what or self.fix}: saves {format_bytes(saving.bytes)} ({percent:.1f}% of the "
                       f"{format_bytes(peak)} peak of {subject.plan.event_name}); confidence {saving.confidence}: "
                       f"{saving.why}")
            finding = self.fired(severity, f"{self.fix[:1].upper()}{self.fix[1:]}: {format_bytes(saving.bytes)} "
                                 "less at the peak", message, evidence=evidence, fixes=saving.fixes or (self.fix,),
                                 commands=saving.commands)
        finding.confidence = Confidence(ConfidenceLevel(saving.confidence), (saving.why,),
                                        {"saving_bytes": int(saving.bytes)})
        return finding


def _rank_key(finding: Finding, rules: Mapping[str, type[MemoryRule]]) -> tuple:
    evidence = finding.evidence
    expected = int(evidence.get("saving_bytes") or 0) * CONFIDENCE_WEIGHT.get(str(evidence.get("confidence")), 0.0)
    keeps = getattr(rules.get(finding.id), "keeps_numerics", True)
    return (-expected, not keeps, finding.id)


def evaluate_rules(subject: MemoryPlanInput, rules: Mapping[str, type[MemoryRule]]) -> list[Finding]:
    """Every rule (``rules``: ``tpudoctor.families.load_rules("memory-rules")``) on one program: the fixes that
    fired, best first (``rank_fixes``' order), then the rest (errors first, then passes by id)."""
    from tpudoctor.rule import evaluate_rule

    findings = [evaluate_rule(cls, subject) for cls in rules.values()]
    fired = [f for f in findings if f.status in (Status.WARN, Status.FAIL)]
    rest = [f for f in findings if f not in fired]
    return sorted(fired, key=lambda f: _rank_key(f, rules)) + sorted(rest, key=lambda f: (-f.status.rank, f.id))


def rank_fixes(subject: MemoryPlanInput, rules: Mapping[str, type[MemoryRule]]) -> list[Finding]:
    """The fixes that would save a worthwhile share of the peak, best first: by ``saving_bytes`` x the weight of
    its confidence (``CONFIDENCE_WEIGHT``), then fixes that keep the numerics before those that change them."""
    return [f for f in evaluate_rules(subject, rules) if f.status in (Status.WARN, Status.FAIL)]


MemoryExample = Example
"""The old name of this family's example type, for plugins written against it (construct it positionally)."""
