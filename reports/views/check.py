"""The check report's view: the title (tool, target, host), the root cause first with its evidence (a list of
records, such as an OOM report's largest allocations, as a table), the results step by step (a step none of whose
checks could apply is one line with the reasons), the closing sentence. A merged pod report (``views/merged.py``)
is this view with the slice before it and its workers' suites in JUnit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.findings import Finding, Status, Step, root_cause
from tpudoctor.reports import escape
from tpudoctor.reports.view import (
    MARKERS,
    WORDS,
    Section,
    Suite,
    Table,
    View,
    findings_of,
    grouped,
    properties,
    where_words,
)
from tpudoctor.units import format_bytes

RECORD_ROWS = 20
CELL_CHARS = 120


def findings_in_order(document: dict[str, Any]) -> list[Finding]:
    return sorted(findings_of(document, "results"), key=lambda f: int(f.step) if f.step is not None else len(Step) + 1)


def summary_sentence(findings: list[Finding], cause: Finding | None) -> str:
    """``tpudoctor found 2 issue(s) (1 warning, 1 failed, 3 ok). Root cause: NODE-001.`` or
    ``No issues found (3 ok).``; a warning is an issue."""
    by_status = grouped(findings, "status")
    counts = {s: len(by_status.get(s, ())) for s in Status}
    problems = counts[Status.FAIL] + counts[Status.ERROR] + counts[Status.WARN]
    tally = ", ".join(f"{counts[s]} {WORDS[s]}" for s in Status if counts[s]) or "no checks ran"
    if not problems:
        return f"No issues found ({tally})."
    where = where_words(cause) if cause is not None else ""
    named = f" Root cause: {cause.id}{f' {where}' if where else ''}." if cause is not None else ""
    return escape.plain(f"tpudoctor found {problems} issue(s) ({tally}).{named}")  # worker ids are one line here


def _cell(key: str, value: Any) -> str:
    text = (format_bytes(value) if key.endswith("_bytes") and isinstance(value, int) and not isinstance(value, bool)
            else f"{value:g}" if isinstance(value, float) else str(value))
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS - 3] + "..."


def record_tables(finding: Finding) -> list[Section]:
    """Each evidence value that is a list of records (an OOM report's largest allocations) as a table."""
    sections = []
    for key, value in finding.evidence.items():
        if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            columns = list(dict.fromkeys(c for record in value for c in record))
            rows = tuple(tuple(_cell(c, r[c]) if c in r else "" for c in columns) for r in value[:RECORD_ROWS])
            sections.append(Section(str(key), table=Table(tuple(map(str, columns)), rows), level=3))
    return sections


def cause_sections(cause: Finding | None, *, scope_said: bool) -> list[Section]:
    if cause is None:
        return []
    step = f"step {int(cause.step)}, {cause.step.label}" if cause.step is not None else "outside the steps"
    return [Section(f"Root cause ({step}): {cause.id} {cause.title}: {WORDS[cause.status]}", findings=(cause,),
                    evidence=True, marked=True, scope_said=scope_said), *record_tables(cause)]


def step_sections(findings: list[Finding], cause: Finding | None, *, scope_said: bool) -> list[Section]:
    """One part per triage step; a step none of whose checks could apply is one line with the reasons."""
    sections, steps = [], grouped(findings, "step")
    for step in Step:
        in_step = steps.get(step)
        if not in_step:
            continue
        title = f"{int(step)}. {step.label}"
        if all(f.status is Status.SKIP for f in in_step):
            reasons = list(dict.fromkeys(f.evidence.get("root_skip_reason") or f.skip_reason or f.message
                                         for f in in_step))
            brief = Section(title, notes=(f"{MARKERS[Status.SKIP]} {len(in_step)} check(s) skipped: {reasons[0]}",
                                          *(f"also: {r}" for r in reasons[1:3])))
            sections += [brief, Section(title, findings=tuple(in_step), verbose_only=True, scope_said=scope_said)]
            continue
        shown = (cause.id,) if cause is not None and cause in in_step else ()
        sections.append(Section(title, findings=tuple(in_step), shown_above=shown, scope_said=scope_said))
    if None in steps:
        sections.append(Section("Other", findings=tuple(steps[None]), scope_said=scope_said))
    return sections


def title(document: dict[str, Any]) -> str:
    target = document.get("target") or {}
    version = (document.get("tool") or {}).get("version", "")
    return " · ".join([f"tpudoctor {version}", *(f"{k} {target[k]}" for k in ("project", "zone", "tpu", "worker")
                                                 if target.get(k)), f"host {document.get('host', '')}"])


def suite(document: dict[str, Any], name: str, summary: str, extra: tuple[tuple[str, str], ...] = ()) -> Suite:
    """The JUnit suite of a check report: its target as properties, then ``extra``."""
    return Suite(name, "tpudoctor.{step}", duration_s=float(document.get("duration_s") or 0.0),
                 timestamp=document.get("started_at", ""), hostname=str(document.get("host") or ""),
                 properties=properties((*(document.get("target") or {}).items(), *extra)),
                 summary=summary)


def view(document: dict[str, Any]) -> View:
    findings = findings_in_order(document)
    cause = root_cause(findings)
    summary = summary_sentence(findings, cause)
    sections = [*cause_sections(cause, scope_said=False), *step_sections(findings, cause, scope_said=False),
                Section(notes=(summary,))]
    return View("check", title(document), (), tuple(sections), tuple(findings),
                suite(document, "tpudoctor check", summary))
