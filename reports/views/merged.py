"""The view of a merged pod report (``tpudoctor merge``, ``check --all-workers``): the slice (which workers
reported) and a worker x step map of the worst status each worker gave, the root cause, the folded results step
by step, the closing sentence; in JUnit the merged suite and one suite of detail per worker that reported.

The map is computed here from the document (which worker gave which status in which step): formatting of data
already in the report, not analysis.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from tpudoctor.findings import Finding, Status, Step, natural_key, root_cause, worst_status
from tpudoctor.reports.view import Section, Suite, View, findings_of, grouped
from tpudoctor.reports.views import check

MATRIX_MAX_WORKERS = 64
CELL = {Status.PASS: "✓", Status.WARN: "!", Status.FAIL: "✗", Status.ERROR: "?", Status.SKIP: "-"}
NO_REPORT = "?"  # unknown: the worker said nothing (POD-001/POD-003/POD-007 say why), which is not a failed check
NOT_RUN = ""
LEGEND = "✓ ok  ! warning  ✗ failed  ? could not run or no report  - skipped"


def worker_step_matrix(document: dict[str, Any]) -> dict[str, dict[int, str]]:
    """worker -> step -> cell: the worst status that worker gave in that step; NO_REPORT for a silent worker."""
    workers = dict(document.get("workers") or {})
    for worker in (document.get("slice") or {}).get("workers_expected") or []:
        workers.setdefault(worker, {})  # an expected worker with no report at all is drawn too, as "?"
    matrix: dict[str, dict[int, str]] = {}
    for worker, entry in sorted(workers.items(), key=lambda kv: natural_key(kv[0])):
        report = entry.get("report")
        if not report:
            matrix[worker] = {int(s): NO_REPORT for s in Step}
            continue
        steps = grouped(findings_of(report, "results"), "step")
        matrix[worker] = {int(s): CELL[worst_status(map(attrgetter("status"), steps[s]))] if s in steps
                          else NOT_RUN for s in Step}
    return matrix


def _slice(document: dict[str, Any]) -> Section:
    from tpudoctor.findings import describe_workers

    info = document.get("slice") or {}
    expected, reported = info.get("workers_expected") or [], info.get("workers_reported") or []
    target = document.get("target") or {}
    name = f"{target.get('tpu')}: " if target.get("tpu") else ""
    outside = [w for w in reported if expected and w not in expected]
    counted = len(reported) - len(outside)
    line = (f"Pod slice {name}{counted} of {len(expected) or len(document.get('workers') or {})} workers reported"
            + (f", and worker {describe_workers(outside)} outside the expected workers "
               f"({describe_workers(expected)})" if outside else "")
            + f" (from {info.get('source') or 'reports'})")
    notes = [line, *(f"left out: {why}" for why in info.get("left_out") or [])]
    matrix = worker_step_matrix(document)
    steps = [s for s in Step if any(row[int(s)] not in (NOT_RUN, NO_REPORT) for row in matrix.values())] or list(Step)
    if len(matrix) > MATRIX_MAX_WORKERS:
        return Section("Workers", notes=(*notes, *(_step_summary(step, matrix) for step in steps)))
    return Section("Workers", notes=tuple(notes), code=tuple(_matrix_lines(matrix, steps)))


def _matrix_lines(matrix: dict[str, dict[int, str]], steps: list[Step]) -> list[str]:
    """A row per step, a column per worker (one character each; numbered workers headed by their digits,
    others by their place, named below), then the legend."""
    workers = list(matrix)
    if not workers:
        return []
    numeric = all(w.isdigit() for w in workers)
    label_width = max(len(f"{int(s)} {s.name.lower()}") for s in steps) + 2
    lines = []
    if numeric and len(workers) > 10:
        lines.append(" " * label_width + "".join(w[-2] if len(w) > 1 else " " for w in workers))
    header = "".join(w[-1] for w in workers) if numeric else " ".join(f"{i}" for i in range(len(workers)))
    lines.append("worker".ljust(label_width) + header)
    for step in steps:
        cells = [matrix[w][int(step)] or " " for w in workers]
        lines.append(f"{int(step)} {step.name.lower()}".ljust(label_width) + ("" if numeric else " ").join(cells))
    if not numeric:
        lines.append("columns: " + ", ".join(f"{i}={w}" for i, w in enumerate(workers)))
    return [*lines, LEGEND]


def _step_summary(step: Step, matrix: dict[str, dict[int, str]]) -> str:
    from tpudoctor.findings import describe_workers

    groups: dict[str, list[str]] = {}
    for worker, row in matrix.items():
        groups.setdefault(row[int(step)], []).append(worker)
    parts = []
    for cell in ("✗", "?", "!", "-", "✓", NOT_RUN):
        if cell in groups:
            ws = groups[cell]
            who = f" ({describe_workers(ws, limit=8)})" if cell in ("✗", "?", "!") else ""
            parts.append(f"{cell or 'not run'} {len(ws)}{who}")
    return f"{int(step)} {step.name.lower()}: " + ", ".join(parts)


def _worker_suites(document: dict[str, Any]) -> tuple[tuple[Suite, tuple[Finding, ...]], ...]:
    details = []
    for worker, entry in (document.get("workers") or {}).items():
        own = entry.get("report")
        if own:
            findings = tuple(check.findings_in_order(own))
            summary = check.summary_sentence(list(findings), root_cause(findings))
            details.append((check.suite(own, f"tpudoctor check worker {worker}", summary, extra=((
                "detail", "this worker's own results; the merged suite counts their failures"),)), findings))
    return tuple(details)


def view(document: dict[str, Any]) -> View:
    findings = check.findings_in_order(document)
    cause = root_cause(findings)
    summary = check.summary_sentence(findings, cause)
    sections = [_slice(document), *check.cause_sections(cause, scope_said=True),
                *check.step_sections(findings, cause, scope_said=True), Section(notes=(summary,))]
    return View("check", check.title(document), (), tuple(sections), tuple(findings),
                check.suite(document, "tpudoctor check (merged across workers)", summary), _worker_suites(document))
