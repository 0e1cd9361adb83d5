"""The view model: what a report shows, said once per report kind; the emitters (``reports/emit_*.py``) draw it,
one per format.

A ``View`` is a title, a few lines under it, ``Section``s (sentences, a ``Table``, preformatted lines, a ``Chart``,
findings) and the facts its JUnit suite carries. Every string in it is plain text taken from the document: the
emitters escape each one by their format's rule, so a view never escapes anything. ``render(document, fmt)`` is
``EMITTERS[fmt](VIEWS[kind](document))`` (``tpudoctor.rendering``).

A finding is shown one way in every kind (``finding_line``): ``[✗] ID Title (on chip 3): message``, then its fix
(``fix:`` and ``$ command`` lines, ``docs:``) when it is not a pass, and its evidence with ``-v``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from tpudoctor.findings import Finding, Scope, Status, describe_workers
from tpudoctor.units import format_bytes

MARKERS = {Status.PASS: "[✓]", Status.WARN: "[!]", Status.FAIL: "[✗]", Status.SKIP: "[-]", Status.ERROR: "[☠]"}
"""Status boxes (flutter doctor's), in every kind and format."""
STYLES = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "bold red", Status.SKIP: "dim", Status.ERROR: "magenta"}
"""A status box's colour in a terminal (``--color``)."""
WORDS = {Status.PASS: "ok", Status.WARN: "warning", Status.FAIL: "failed", Status.SKIP: "skipped",
         Status.ERROR: "could not run"}

EVIDENCE_CHARS = 300
"""An evidence value shown with ``-v`` is cut here: the JSON document holds it whole."""


@dataclasses.dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align: str = ""
    """One letter per column, ``l`` or ``r`` (missing: ``l``); text pads and HTML/Markdown align by it."""
    marked_rows: frozenset[int] = frozenset()
    """Rows to set apart (HTML shades them, Markdown and text say nothing more than the cells)."""


@dataclasses.dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str
    """The value as words beside the bar."""
    marked: bool = False


@dataclasses.dataclass(frozen=True)
class Span:
    lane: str
    start: float
    end: float
    text: str
    """Said when pointed at."""
    marked: bool = False
    group: str = ""
    """Spans of one group share a colour, named in the legend (goodput's buckets); without: marked or not."""


@dataclasses.dataclass(frozen=True)
class Point:
    """A point of a log-log roofline: ``x`` FLOPs per HBM byte, ``y`` FLOP/s, ``area`` its share of time (%)."""

    x: float
    y: float
    area: float
    text: str
    group: str = ""
    """What bounds it (``compute``, ``hbm``): its colour."""
    marked: bool = False


@dataclasses.dataclass(frozen=True)
class Chart:
    """Horizontal bars, or a step line over time (``line``: its ``peak`` point marked, ``limit`` dashed), drawn
    by HTML only (text and Markdown have the same figures in a table)."""

    title: str
    bars: tuple[Bar, ...] = ()
    line: tuple[tuple[float, float], ...] = ()
    """(x, y) points; y holds until the next x."""
    peak: Bar | None = None
    """The marked point: ``label`` its x as a number, ``value`` its y, ``text`` said beside it."""
    limit: Bar | None = None
    """A dashed level (a capacity): ``value`` its y, ``text`` its words."""
    axis: tuple[str, str, str] = ("", "", "")
    """The top y, the first x and the last x as words."""
    spans: tuple[Span, ...] = ()
    """Spans over time, one lane per ``lane`` (a Gantt chart); ``legend``: what marked and unmarked spans are."""
    legend: tuple[str, str] = ("", "")
    points: tuple[Point, ...] = ()
    """A roofline (log-log) under ``roofs``: (peak FLOP/s, peak HBM bytes/s)."""
    roofs: tuple[float, float] = (0.0, 0.0)


@dataclasses.dataclass(frozen=True)
class Section:
    title: str = ""
    notes: tuple[str, ...] = ()
    """Sentences, one line each."""
    findings: tuple[Finding, ...] = ()
    table: Table | None = None
    code: tuple[str, ...] = ()
    """Preformatted lines (a stack), kept as they are."""
    commands: tuple[str, ...] = ()
    """Shell commands to run: ``$ command`` in text, a ``sh`` block in Markdown."""
    chart: Chart | None = None
    verbose_only: bool = False
    """Shown with ``-v`` (text and Markdown); HTML shows every section."""
    marked: bool = False
    """Set apart (HTML frames it): the root cause, the verdict."""
    level: int = 2
    """Its heading's level: 2 a part of the report, 3 a part of the part before."""
    evidence: bool = False
    """Its findings' evidence shown without ``-v`` (the root cause)."""
    shown_above: tuple[str, ...] = ()
    """Ids of findings a part before showed whole: here their line only."""
    confidence: bool = False
    """Its findings' confidence on a line of its own (profile's rules weigh evidence of uneven strength; a memory
    finding's message says its own)."""
    scope_said: bool = False
    """Its findings' messages say where they hold (a merged report's "FAIL on 2 of 64 workers (3, 7)"), so
    their line does not say it again."""


@dataclasses.dataclass(frozen=True)
class Suite:
    """What the JUnit testsuite says besides its testcases."""

    name: str
    classname: str
    """Each testcase's; ``{step}`` becomes the finding's triage step (``step1_node``)."""
    duration_s: float | None = None
    timestamp: str = ""
    hostname: str = ""
    properties: tuple[tuple[str, str], ...] = ()
    summary: str = ""
    """The suite's ``system-out``."""


@dataclasses.dataclass(frozen=True)
class View:
    kind: str
    """``tpudoctor <kind>``: the HTML page's title."""
    title: str
    notes: tuple[str, ...]
    sections: tuple[Section, ...]
    findings: tuple[Finding, ...]
    """Every finding of the report, for JUnit (a section shows them to people)."""
    suite: Suite
    details: tuple[tuple[Suite, tuple[Finding, ...]], ...] = ()
    """JUnit suites of detail (a merged report's workers): never failed, the main suite counts their findings."""
    thresholds: tuple[Finding, ...] = ()
    """The outcome of a threshold the user set (goodput's ``--min-ettr``), JUnit testcases before the findings,
    judged at FAIL whatever ``--fail-on`` says (``Gate.fails(threshold=True)``)."""

    def __post_init__(self) -> None:  # a view leaves out a part it has nothing for by giving None
        object.__setattr__(self, "sections", tuple(s for s in self.sections if s is not None))


def classname(suite: Suite, finding: Finding) -> str:
    step = f"step{int(finding.step)}_{finding.step.name.lower()}" if finding.step is not None else "other"
    return suite.classname.replace("{step}", step)  # a model name may hold braces: no format()


def findings_of(document: dict[str, Any], key: str = "findings") -> tuple[Finding, ...]:
    """The document's findings (a check report keeps them under ``results``)."""
    return tuple(Finding.from_dict(raw) for raw in document.get(key) or ())


def grouped(findings: Sequence[Finding], key: str) -> dict[Any, list[Finding]]:
    """The findings by ``key`` (``status``, ``step``: those outside the steps under None), in the order given."""
    out: dict[Any, list[Finding]] = {}
    for finding in findings:
        out.setdefault(getattr(finding, key), []).append(finding)
    return out


def fix_lines(finding: Finding) -> list[str]:
    """The fix's text, a line each (a goodput rule's fix lists several ways)."""
    text = finding.remediation.text if finding.remediation is not None else ""
    return [line for line in (text or "").splitlines() if line.strip()]


def scope_words(scope: Scope) -> str:
    """``on workers 0-7; hosts t1v-n-0``: worker lists folded into ranges (``describe_workers``), in every kind
    and format; empty for the whole node or job."""
    parts = [f"{singular if len(values) == 1 else plural} {words}"
             for singular, plural, values, words in (
                 ("worker", "workers", scope.workers, describe_workers(scope.workers)),
                 ("host", "hosts", scope.hosts, ", ".join(scope.hosts)),
                 ("chip", "chips", scope.chips, ", ".join(scope.chips))) if values]
    return f"on {'; '.join(parts)}" if parts else ""


def where_words(finding: Finding) -> str:
    """The scope a finding's line says (``scope_words``); empty for a pass."""
    return "" if finding.status is Status.PASS else scope_words(finding.scope)


def finding_line(finding: Finding, *, scope: bool = True) -> str:
    """The one line of a finding in every kind and format: ``[✗] ID Title (scope): message`` (``scope=False``:
    the message says where)."""
    where = where_words(finding) if scope else ""
    where = f" ({where})" if where else ""
    message = finding.message
    if finding.status is Status.SKIP and "blocked_by" in finding.evidence:
        message = f"blocked by {finding.evidence['blocked_by']}"  # the blocker's own line says why
    return f"{MARKERS[finding.status]} {finding.id} {finding.title}{where}: {message}"


@dataclasses.dataclass(frozen=True)
class Shown:
    """A finding as every format shows it: its line, then (not a pass) how sure (``Section.confidence``) and its
    fix, then its evidence (``-v``; HTML folds it); ``brief``: a part before showed it whole, here its line only."""

    status: Status
    line: str
    confidence: str = ""
    fixes: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    docs: str = ""
    evidence: tuple[str, ...] = ()
    brief: bool = False


def confidence_line(level: str, reasons: Sequence[str]) -> str:
    """``confidence: medium - one host; 3 steps``: how sure a finding or a verdict is, in every kind."""
    return f"confidence: {level}" + (f" - {'; '.join(reasons)}" if reasons else "")


def shown(section: Section) -> list[Shown]:
    """The section's findings, each as ``Shown``: the one place that decides what of a finding is shown."""
    out = []
    for finding in section.findings:
        fix = finding.remediation if finding.status in (Status.FAIL, Status.WARN, Status.ERROR) else None
        sure = finding.confidence if section.confidence and finding.status is not Status.PASS else None
        out.append(Shown(finding.status, finding_line(finding, scope=not section.scope_said),
                         confidence_line(sure.level.value, sure.reasons) if sure else "",
                         tuple(fix_lines(finding)) if fix else (), tuple(fix.commands) if fix else (),
                         (fix.docs_url or "") if fix else "", tuple(evidence_lines(finding)),
                         brief=finding.id in section.shown_above))
    return out


def evidence_lines(finding: Finding) -> list[str]:
    """``key: value``, one per evidence item (``-v``), each cut at ``EVIDENCE_CHARS``."""
    out = []
    for key, value in finding.evidence.items():
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        if key.endswith("_bytes") and isinstance(value, int) and not isinstance(value, bool):
            shown = f"{value} ({format_bytes(value)})"
        if len(shown) > EVIDENCE_CHARS:
            shown = shown[:EVIDENCE_CHARS - 3] + "..."
        out.append(f"{key}: {shown}")
    return out


def figure(value: Any, spec: str = ".3f", missing: str = "-", unit: str = "") -> str:
    """A figure the document may lack: ``format(value, spec)`` and its unit, or ``missing`` for none."""
    return missing if value is None else f"{format(value, spec)}{unit}"


def properties(pairs: Sequence[tuple[str, Any]]) -> tuple[tuple[str, str], ...]:
    """JUnit properties: the pairs whose value says something, as strings."""
    return tuple((name, str(value)) for name, value in pairs if value)
