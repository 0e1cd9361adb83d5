"""``tpudoctor hang --tpu NAME --all-workers``: every worker runs ``tpudoctor hang --format json`` through the
one fan-out (``tpudoctor.pod.FanOut``, driven by ``tpudoctor.hang.product``), and their captures are
analysed together here.

A worker's answer is its hang document; the merge reads each worker's raw captures back and analyses all
processes of the slice at once, so the groups, the odd one out and the decision span the slice. A worker
that gave no document is a finding scoped to it (the fan-out's own), and a suspect: the others may wait
for it. All workers sample at about the same time (each waits its own ``--interval``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

from tpudoctor.errors import InputError
from tpudoctor.findings import Finding, Target
from tpudoctor.hang.digest import HangDigest
from tpudoctor.hang.model import ProcessCapture
from tpudoctor.hang.report import DOCUMENT_KIND, SCHEMA_VERSION, HangReport

if TYPE_CHECKING:
    from tpudoctor.pod.outcomes import WorkerOutcome


def merge_outcomes(outcomes: Iterable[WorkerOutcome], *, target: Target, started_at: _dt.datetime,
                   interval_s: float, source: str, digests: list[HangDigest] | None = None,
                   disabled_plugins: Collection[str] = (), dump_dir: str | None = None) -> HangReport:
    """The fan-out's outcomes (``tpudoctor.pod.FanOut``: each worker's hang document, or the finding in its
    place) as one report for the slice (``merge_answers``); with ``dump_dir``, each worker's document kept."""
    answers: dict[str, dict[str, Any] | Finding] = {
        o.worker: o.problem if o.problem is not None else o.document for o in outcomes}
    if dump_dir:
        _keep_documents(answers, dump_dir)
    return merge_answers(answers, target=target, started_at=started_at, interval_s=interval_s, source=source,
                         digests=digests, disabled_plugins=disabled_plugins)


def check_document(document: dict[str, Any], source: str) -> None:
    """A hang report this tpudoctor reads (a worker's answer to the fan-out, or a file to ``--merge``)."""
    version = str(document.get("schema_version") or "")
    if version.split(".", 1)[0] != SCHEMA_VERSION.split(".", 1)[0]:
        raise InputError(f"{source}: hang report schema {version or '?'}, this tpudoctor reads {SCHEMA_VERSION}",
                         hint="install the same tpudoctor version on every worker")
    if not isinstance(document.get("captures"), list):
        raise InputError(f"{source}: the hang report has no captures")


def merge_answers(answers: dict[str, dict[str, Any] | Finding], *, target: Target, started_at: _dt.datetime,
                  interval_s: float, source: str, digests: list[HangDigest] | None = None,
                  disabled_plugins: Collection[str] = ()) -> HangReport:
    """One report for the slice from each worker's document (or the finding in its place), judged by the hang
    rules less ``disabled_plugins``."""
    import time

    from tpudoctor.hang.analyze import analyze

    began = time.monotonic()
    captures: list[ProcessCapture] = []
    digests = list(digests or [])  # Cloud Logging's, read once for the slice
    problems: list[Finding] = []
    workers: dict[str, dict[str, Any]] = {}
    samples = 0
    starts, intervals, log_sources = [], [], []
    for worker, answer in answers.items():
        if isinstance(answer, Finding):
            problems.append(answer)
            workers[worker] = {"status": "no_report", "why": answer.message, "host": None}
            continue
        try:
            theirs = [ProcessCapture.from_dict(c) for c in answer["captures"]]
            their_digests = [HangDigest.from_dict(d) for d in answer.get("digests") or []]
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"worker {worker}: the hang report is not readable: {type(exc).__name__}: {exc}") from None
        for capture in theirs:
            capture.worker = worker
        captures += theirs
        digests += their_digests
        samples = max(samples, int(answer.get("samples") or 0))
        intervals.append(float(answer.get("interval_s") or 0.0))
        if answer.get("started_at"):
            starts.append(_dt.datetime.fromisoformat(answer["started_at"]))
        log_sources += [f"worker {worker}: {path}" for path in (answer.get("environment") or {}).get("log_sources") or []]
        tpu_info = (answer.get("environment") or {}).get("tpu_info") or {}
        workers[worker] = {"status": "reported" if theirs else "no_process", "host": answer.get("host"),
                           "verdict": answer.get("verdict"), "source": source,
                           "duty_cycle_percent": tpu_info.get("duty_cycle_percent") or {}}
    # The workers' own times: a replayed capture was taken long before this run.
    report = analyze(captures, target=target, host=f"{len(answers)} workers",
                     started_at=min(starts) if starts else started_at,
                     interval_s=max(intervals, default=interval_s), samples=samples, digests=digests,
                     workers=workers, worker_problems=problems,
                     environment={"source": source, "merge_s": 0.0, "log_sources": log_sources},
                     disabled_plugins=disabled_plugins)
    report.environment["merge_s"] = round(time.monotonic() - began, 3)
    report.duration_s = (_dt.datetime.now(_dt.timezone.utc) - started_at).total_seconds()
    report.environment["fanout_started_at"] = started_at.isoformat()
    return report


def _keep_documents(answers: dict[str, dict[str, Any] | Finding], folder: str) -> None:
    """Each worker's document (its raw stacks included) as ``worker-N.json``."""
    import json
    from pathlib import Path

    root = Path(folder)
    try:
        root.mkdir(parents=True, exist_ok=True)
        for worker, answer in answers.items():
            data = answer.to_dict() if isinstance(answer, Finding) else answer
            (root / f"worker-{worker}.json").write_text(json.dumps(data, indent=1))
    except OSError as exc:
        raise InputError(f"--dump-dir {folder}: cannot write: {exc.strerror or exc}") from None


def read_worker_documents(sources: list[str]) -> dict[str, dict[str, Any] | Finding]:
    """Hang reports the workers wrote themselves (``kubectl exec POD -- tpudoctor hang --format json > POD.json``),
    from files or folders of ``*.json``, keyed by worker: the report's own worker, else the file's name
    (``3.json``, ``worker-3.json``: worker 3; ``POD.json``: the pod). A file without a readable report
    (an ``exec`` that failed) is a finding scoped to that worker, and the others still merge."""
    import json
    import re
    from pathlib import Path

    from tpudoctor.findings import Remediation, Status
    from tpudoctor.pod.documents import document_from_output
    from tpudoctor.pod.outcomes import REPORT_READABLE, worker_problem

    files: list[Path] = []
    for source in sources:
        path = Path(source)
        if path.is_dir():
            files += sorted(path.glob("*.json"))
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"--merge {source}: no such file or folder")
    if not files:
        raise InputError(f"--merge {' '.join(sources)}: no *.json hang report found")
    found: dict[str, dict[str, Any] | Finding] = {}
    for path in files:
        named = re.fullmatch(r"(?:worker-)?(\d+)", path.stem)
        worker = named.group(1) if named else path.stem
        try:
            document = document_from_output(path.read_text(encoding="utf-8", errors="replace"), str(path),
                                            kind=DOCUMENT_KIND, what="hang report")
            check_document(document, str(path))
        except (InputError, OSError) as exc:
            found[worker] = worker_problem(
                REPORT_READABLE, "Every worker's report is readable", worker, Status.ERROR,
                f"{path.name} holds no readable hang report: {getattr(exc, 'message', exc)}",
                remediation=Remediation(text="Run tpudoctor hang on that worker by hand and read its error."))
            continue
        if document.get("workers"):
            raise InputError(f"{path} is already a merged hang report", hint="merge the workers' own reports")
        own = (document.get("target") or {}).get("worker")
        worker = str(own) if own not in (None, "") else worker
        if worker in found:
            raise InputError(f"two hang reports for worker {worker} ({path} and another)",
                             hint="merge the reports of one run at a time")
        found[worker] = json.loads(json.dumps(document))
    return found
