"""A merged pod report in every format: the check renderers format the folded results, and the per-worker
map is their section (``WorkerMap``): a worker x step matrix (text, markdown, HTML), every worker's own report
(JSON) and one JUnit suite per worker that reported.

The matrix is computed here from the merged document (which worker gave which status in which step); it
is formatting of data already in the report, not analysis.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from tpudoctor.findings import Finding, Gate, Report, Status, Step, natural_key, worst_status
from tpudoctor.reports import escape
from tpudoctor.reports.sections import Section

MATRIX_MAX_WORKERS = 64
CELL = {Status.PASS: "✓", Status.WARN: "!", Status.FAIL: "✗", Status.ERROR: "?", Status.SKIP: "-"}
NO_REPORT = "?"  # unknown: the worker said nothing (POD-001/POD-003/POD-007 say why), which is not a failed check
NOT_RUN = " "
LEGEND = "✓ ok  ! warning  ✗ failed  ? could not run or no report  - skipped"


def render_merged_document(document: dict[str, Any], fmt: str, *, verbose: bool = False,
                           color: bool = False, gate: Gate | None = None) -> str:
    """``document``: as ``tpudoctor.documents.merged_document`` prepared it (scrubbed, redacted, validated),
    formatted by the check renderers with the per-worker map as their section; ``gate``: the run's (JUnit)."""
    from tpudoctor.reports import render_check_report

    report = Report.from_dict(document)
    report.duration_s = float(document.get("duration_s", 0.0))
    return render_check_report(report, fmt, verbose=verbose, color=color, sections=(WorkerMap(document),),
                               scope_in_title=False, gate=gate)


class WorkerMap(Section):
    """The slice: which workers reported, and a worker x step matrix of the worst status each worker gave
    (text, markdown, HTML); each worker's own report (JSON); a suite per worker (JUnit)."""

    def __init__(self, document: dict[str, Any]):
        self.document = document
        self.matrix = worker_step_matrix(document)

    def text(self) -> str:
        return f"{_slice_line(self.document)}\n{_matrix_text(self.matrix)}"

    def markdown(self) -> str:
        return f"{escape.markdown(_slice_line(self.document))}\n\n{_matrix_markdown(self.matrix)}".removesuffix("\n")

    def html(self) -> str:
        return f"<p>{escape.html(_slice_line(self.document))}</p>{_matrix_html(self.matrix)}"

    def json(self) -> dict[str, Any]:
        return {key: self.document[key] for key in ("slice", "workers") if key in self.document}

    def junit(self, suites: ET.Element, suite: ET.Element, cases: Sequence[tuple[ET.Element, Finding]]) -> None:
        """The merged suite (each testcase names the workers it fails on) and one suite per worker, so a CI
        view shows worker 3's own results under worker 3. A worker's suite is detail: its results are already
        counted in the merged suite, so none of its testcases fails again (each says its status in
        ``<system-out>``; the suite's ``detail`` property says so); one out-of-memory is one failure."""
        from tpudoctor.reports.check_junit import testsuite

        suite.set("name", "tpudoctor check (merged across workers)")
        for case, result in cases:
            if result.scope.workers:  # the name ends "(on workers 3, 7)"; add to its properties
                props = case.find("properties")
                if props is None:
                    props = ET.SubElement(case, "properties")
                ET.SubElement(props, "property", name="workers", value=",".join(result.scope.workers))
        for worker, entry in (self.document.get("workers") or {}).items():
            own = entry.get("report")
            if own:
                detail = testsuite(Report.from_dict(own), name=f"tpudoctor check worker {worker}", gate=None)[0]
                ET.SubElement(detail.find("properties"), "property", name="detail",
                              value="this worker's own results; the merged suite counts their failures")
                suites.append(detail)


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
        by_step: dict[int, list[Status]] = {}
        for result in report.get("results") or []:
            if result.get("step"):
                by_step.setdefault(int(result["step"]), []).append(Status(result["status"]))
        matrix[worker] = {int(s): CELL[worst_status(by_step[int(s)])] if int(s) in by_step else NOT_RUN
                          for s in Step}
    return matrix


def _steps_shown(matrix: dict[str, dict[int, str]]) -> list[Step]:
    return [s for s in Step if any(row[int(s)] not in (NOT_RUN, NO_REPORT) for row in matrix.values())] or list(Step)


def _slice_line(document: dict[str, Any]) -> str:
    info = document.get("slice") or {}
    expected, reported = info.get("workers_expected") or [], info.get("workers_reported") or []
    target = document.get("target") or {}
    name = f"{target.get('tpu')}: " if target.get("tpu") else ""
    from tpudoctor.pod.worker_ids import describe_workers

    outside = [w for w in reported if expected and w not in expected]
    counted = len(reported) - len(outside)
    line = (f"Pod slice {name}{counted} of {len(expected) or len(document.get('workers') or {})} workers reported"
            + (f", and worker {describe_workers(outside)} outside the expected workers "
               f"({describe_workers(expected)})" if outside else "")
            + f" (from {info.get('source') or 'reports'})")
    return "\n".join(escape.plain(text) for text in [line] + [f"left out: {why}" for why in info.get("left_out") or []])


def _matrix_text(matrix: dict[str, dict[int, str]]) -> str:
    steps = _steps_shown(matrix)
    workers = list(matrix)
    if not workers:
        return ""
    if len(workers) > MATRIX_MAX_WORKERS:
        return "\n".join(_summary_line(step, matrix) for step in steps) + "\n"
    numeric = all(w.isdigit() for w in workers)
    label_width = max(len(f"{int(s)} {s.name.lower()}") for s in steps) + 2
    lines = []
    if numeric and len(workers) > 10:
        tens = "".join(w[-2] if len(w) > 1 else " " for w in workers)
        lines.append(" " * label_width + tens)
    header = "".join(w[-1] for w in workers) if numeric else " ".join(f"{i}" for i in range(len(workers)))
    lines.append("worker".ljust(label_width) + header)
    for step in steps:
        cells = "".join(matrix[w][int(step)] for w in workers) if numeric else " ".join(
            matrix[w][int(step)] for w in workers)
        lines.append(f"{int(step)} {step.name.lower()}".ljust(label_width) + cells)
    if not numeric:
        lines.append("columns: " + ", ".join(f"{i}={escape.plain(w)}" for i, w in enumerate(workers)))
    lines.append(LEGEND)
    return "\n".join(lines) + "\n"


def _summary_line(step: Step, matrix: dict[str, dict[int, str]]) -> str:
    from tpudoctor.pod.worker_ids import describe_workers

    groups: dict[str, list[str]] = {}
    for worker, row in matrix.items():
        groups.setdefault(row[int(step)], []).append(worker)
    parts = []
    for cell in ("✗", "?", "!", "-", "✓", NOT_RUN):
        if cell in groups:
            ws = groups[cell]
            who = f" ({describe_workers(ws, limit=8)})" if cell in ("✗", "?", "!") else ""
            parts.append(f"{cell.strip() or 'not run'} {len(ws)}{who}")
    return escape.plain(f"{int(step)} {step.name.lower()}: " + ", ".join(parts))


def _matrix_markdown(matrix: dict[str, dict[int, str]]) -> str:
    steps = _steps_shown(matrix)
    if len(matrix) > MATRIX_MAX_WORKERS:
        return "\n".join(f"- {escape.markdown(_summary_line(step, matrix))}" for step in steps) + "\n"
    lines = ["| worker | " + " | ".join(f"{int(s)} {s.name.lower()}" for s in steps) + " |",
             "|---|" + "---|" * len(steps)]
    for worker, row in matrix.items():
        lines.append(f"| {escape.markdown(worker)} | " + " | ".join(row[int(s)].strip() or " " for s in steps) + " |")
    return "\n".join(lines) + f"\n\n{LEGEND}\n"


def _matrix_html(matrix: dict[str, dict[int, str]]) -> str:
    steps = _steps_shown(matrix)
    if len(matrix) > MATRIX_MAX_WORKERS:
        return "<ul>" + "".join(f"<li>{escape.html(_summary_line(s, matrix))}</li>" for s in steps) + "</ul>"
    rows = ["<table><tr><th>worker</th>" + "".join(f"<th>{int(s)} {s.name.lower()}</th>" for s in steps) + "</tr>"]
    for worker, row in matrix.items():
        rows.append(f"<tr><td>{escape.html(worker)}</td>" + "".join(f"<td>{row[int(s)]}</td>" for s in steps) + "</tr>")
    return "".join(rows) + "</table>"
