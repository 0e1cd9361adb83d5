"""The one rule contract every family builds on: checks, profile, goodput and hang rules, and the next ones.

A ``Rule[Input]`` is one declarative class: an id, a title, a docstring, a docs link, where it came from
(``source``: ``builtin`` or the plugin's ``distribution:name``), and ``examples``, the inputs it must judge and
what it must say of each. Each family fixes ``Input`` (a facts dict, one host's profile figures, a goodput
document, one thread's stack, a hang report) and the ``FindingKind`` of its findings. The examples are the
rule's tests and its docs: ``conformance_problems`` runs them, and one test runs it for every family.

Most rules judge: ``evaluate(input)`` returns a ``Finding`` (``passed`` / ``fired`` build it), and
``evaluate_rule`` runs one so that a crash is an ERROR finding and the other rules still run. A family whose
rules answer something else (hang's stack classifiers say where a thread stands) overrides ``example_problem``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from tpudoctor.findings import Finding, FindingKind, Remediation, Severity, Status

InputT = TypeVar("InputT")


@dataclasses.dataclass(frozen=True)
class Example(Generic[InputT]):
    """The one example type of every family: an input and what the rule must say of it. ``status``: the status its
    finding must have; ``saving_bytes``: the saving a memory fix must predict; ``matches``: for a family that
    places rather than judges (hang rules), whether the rule must match the input."""

    name: str
    input: InputT
    status: Status | None = None
    saving_bytes: int | None = None
    matches: bool | None = None


class Rule(Generic[InputT]):
    """Base of every rule family. Subclasses set the metadata and implement ``evaluate``."""

    id: ClassVar[str] = ""
    title: ClassVar[str] = ""
    docs: ClassVar[str] = ""
    examples: ClassVar[tuple[Any, ...]] = ()
    source: ClassVar[str] = "builtin"
    kind: ClassVar[FindingKind] = FindingKind.CHECK
    """The kind of the findings the family's rules give."""

    def evaluate(self, subject: InputT) -> Finding:
        raise NotImplementedError

    def applies(self, subject: InputT) -> bool:
        """False: the rule has nothing to say on this input and the report records no finding for it."""
        return True

    @classmethod
    def description(cls) -> str:
        return (cls.__doc__ or "").strip()

    @classmethod
    def example_input(cls, example: Any) -> InputT:
        """What an example feeds ``evaluate`` (families whose examples name it otherwise override this)."""
        return example.input

    @classmethod
    def example_problem(cls, example: Any) -> str | None:
        """Why ``example`` does not hold (None when it does): by default, the status ``evaluate`` gives."""
        finding = evaluate_rule(cls, cls.example_input(example))
        if finding.status is not example.status:
            return f"{cls.id}: example {example.name!r} gave {finding.status.value}, not {example.status.value}: " \
                   f"{finding.message}"
        return None

    def passed(self, message: str, *, evidence: Mapping[str, Any] | None = None, title: str | None = None) -> Finding:
        return Finding(id=self.id, step=None, title=title or self.title, status=Status.PASS, message=message,
                       severity=Severity.INFO, evidence=dict(evidence or {}), kind=self.kind)

    def fired(self, severity: Severity, title: str, message: str, *, evidence: Mapping[str, Any],
              fixes: Iterable[str], commands: Iterable[str] = ()) -> Finding:
        """The rule holds: FAIL for a high or critical cause, WARN otherwise. ``fixes`` are prose, one per line
        of the remediation text; ``commands`` are what a person can copy and run."""
        status = Status.FAIL if severity.rank >= Severity.HIGH.rank else Status.WARN
        remediation = Remediation(text="\n".join(fixes), commands=tuple(commands), docs_url=self.docs or None)
        return Finding(id=self.id, step=None, title=title, status=status, message=message, severity=severity,
                       evidence=dict(evidence), remediation=remediation, kind=self.kind)


def evaluate_rule(rule: type[Rule[InputT]] | Rule[InputT], subject: InputT) -> Finding:
    """One rule on one input; a rule that crashes or returns something else is an ERROR finding naming it."""
    instance = rule() if isinstance(rule, type) else rule
    try:
        finding = instance.evaluate(subject)
        if not isinstance(finding, Finding):
            raise TypeError(f"evaluate returned {type(finding).__name__}, not a Finding")
    except Exception as exc:  # noqa: BLE001 - one broken rule must not take the report down
        finding = Finding(id=instance.id, step=None, title=instance.title or instance.id, status=Status.ERROR,
                          message=f"rule {instance.id} crashed: {type(exc).__name__}: {exc}",
                          severity=Severity.MEDIUM, kind=instance.kind)
    return finding


def conformance_problems(rule: type[Rule[Any]]) -> list[str]:
    """What keeps ``rule`` from conforming: no id, no docstring, no example, or an example it fails."""
    problems = []
    if not rule.id:
        problems.append(f"{rule.__qualname__}: no id")
    if not rule.description():
        problems.append(f"{rule.id}: no docstring (its reference page says what it looks for)")
    if not rule.examples:
        problems.append(f"{rule.id}: no examples")
    for example in rule.examples:
        try:
            problem = rule.example_problem(example)
        except Exception as exc:  # noqa: BLE001 - a broken example is a conformance problem, not a crash
            problem = f"{rule.id}: example {getattr(example, 'name', example)!r} crashed: {type(exc).__name__}: {exc}"
        if problem:
            problems.append(problem)
    return problems
