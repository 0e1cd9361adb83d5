"""Where per-worker reports live: local files, a folder, or a ``gs://bucket/prefix/``.

Writing: ``tpudoctor check -o gs://bucket/run/{worker}.json`` fills ``{worker}`` and ``{host}`` here; the report
is written by ``tpudoctor.output`` (only a destination the user named is ever written). Reading: every ``*.json`` under a folder or prefix,
each one a worker's report (the worker comes from the report, else from the file's name).
"""

from __future__ import annotations

import concurrent.futures
import re
import socket
from pathlib import Path
from typing import Any

from tpudoctor import locations
from tpudoctor.errors import InputError, UsageError
from tpudoctor.findings import Report
from tpudoctor.pod.outcomes import WorkerOutcome

PLACEHOLDERS = ("{worker}", "{host}")
MAX_REPORTS = 4096
READ_THREADS = 16


def has_placeholder(path: str | None) -> bool:
    return bool(path) and any(p in path for p in PLACEHOLDERS)


def fill_placeholders(path: str, report: Report, *, session=None) -> str:
    """``{worker}`` and ``{host}`` of ``-o`` filled from the report (``session``: where to ask the metadata
    server when the report does not know its worker)."""
    worker = (report.environment or {}).get("worker") or report.target.worker
    if "{worker}" in path and not worker:
        worker = _metadata_worker_number(session)
    if "{worker}" in path and not worker:
        raise UsageError(f"-o {path}: this machine's worker number is unknown",
                         hint="pass --worker N (or set TPU_WORKER_ID), or use {host} in the file name")
    host = report.host or socket.gethostname()
    return path.replace("{worker}", _safe(str(worker or ""))).replace("{host}", _safe(host))


def _metadata_worker_number(session) -> str | None:
    """This TPU VM's worker number from the metadata server, when the run did not read it (steps 2-5 only)."""
    from tpudoctor.gcp.metadata import MetadataUnavailable
    from tpudoctor.gcp.session import process_session

    try:
        value = (session or process_session(locations.DEFAULT_TIMEOUT_S)).metadata.get(
            "instance/attributes/agent-worker-number")
    except MetadataUnavailable:
        return None
    return value.strip() if value and value.strip().isdigit() else None


def _safe(part: str) -> str:
    """A path component: no separators or parent references can come in through a host name."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", part).lstrip(".") or "_"


def read_reports(sources: list[str], *, session=None, skipped: list[str] | None = None) -> list[WorkerOutcome]:
    """Every worker report named by ``sources`` (files, folders, gs:// prefixes or objects); ``session``: the
    run's Google Cloud session. A tpudoctor report of another kind (diag, goodput) is no worker's: it is left
    out, and why is added to ``skipped``."""
    items: list[tuple[str, Any]] = []  # (source name, reader returning (bytes, created))
    for source in sources:
        if locations.is_gcs(source):
            items += _gcs_items(source, session)
        else:
            items += _local_items(source)
    if not items:
        raise InputError(f"no reports found in {', '.join(sources)}",
                         hint="each worker writes one with: tpudoctor check --format json -o DIR/{worker}.json")
    if len(items) > MAX_REPORTS:
        raise InputError(f"{len(items)} reports: more than {MAX_REPORTS} workers; merge fewer at once")
    if not any(locations.is_gcs(source) for source in sources):
        read = [_read_one(item) for item in items]  # local files: threads would only add start-up cost
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
            read = list(pool.map(_read_one, items))
    if skipped is not None:
        skipped += [r for r in read if isinstance(r, str)]
    return [r for r in read if isinstance(r, WorkerOutcome)]


def _read_one(item: tuple[str, Any]) -> WorkerOutcome | str:
    """A report that cannot be read is a finding about that worker; the other reports still merge. A report of
    another kind is no worker's: why it is left out."""
    from tpudoctor.findings import Remediation, Status
    from tpudoctor.pod.documents import report_from_bytes
    from tpudoctor.pod.outcomes import REPORT_READABLE, worker_problem
    from tpudoctor.report_file import ForeignDocument

    name, reader = item
    try:
        data, created = reader()
        report, document = report_from_bytes(data, name)
    except ForeignDocument as exc:
        return exc.message
    except InputError as exc:
        worker = Path(name).name.removesuffix(".json") or name
        return WorkerOutcome(worker=worker, source=name, problem=worker_problem(
            REPORT_READABLE, "Every worker's report is readable", worker, Status.ERROR, exc.message,
            evidence={"source": name},
            remediation=Remediation(text="Run the check on that worker again and let it write its report anew.",
                                    commands=("tpudoctor check --format json -o REPORT_DESTINATION/{worker}.json",))))
    return WorkerOutcome(worker=_worker_of(report, name), report=report, document=document, source=name,
                         received_at=created)


def _worker_of(report: Report, name: str) -> str:
    worker = (report.environment or {}).get("worker") or report.target.worker
    if worker:
        return str(worker)
    stem = Path(name).name.removesuffix(".json")
    return stem if stem else report.host


def _local_items(source: str) -> list[tuple[str, Any]]:
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
    elif path.is_file():
        files = [path]
    elif (special := locations.special_file_kind(source)) is not None:
        raise InputError(f"{source} is {special}, not a report file",
                         hint="give report files, a folder of them, or gs://bucket/prefix/")
    else:
        raise InputError(f"{source} does not exist", hint="give report files, a folder of them, or gs://bucket/prefix/")
    return [(str(p), lambda p=p: (_read_local(p), None)) for p in files]


def _read_local(path: Path) -> bytes:
    from tpudoctor.report_file import MAX_DOCUMENT_BYTES

    try:
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            raise InputError(f"{path} is too big for a check report")
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


def _gcs_items(uri: str, session) -> list[tuple[str, Any]]:
    if uri.endswith(".json"):
        found = locations.find_object(uri, session=session)
        objects = [found] if found is not None else []
    else:
        objects = locations.list_files(uri, suffix=".json", limit=MAX_REPORTS, session=session)

    def reader(entry: locations.Entry):
        return lambda: (locations.read_bytes(entry.location, session=session), entry.created)

    return [(entry.location, reader(entry)) for entry in objects]
