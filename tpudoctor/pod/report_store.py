"""Where per-worker reports live: local files, a folder, or a ``gs://bucket/prefix/``.

Writing: ``tpudoctor check -o gs://bucket/run/{worker}.json`` fills ``{worker}`` and ``{host}`` and uploads;
only a destination the user named is ever written. Reading: every ``*.json`` under a folder or prefix,
each one a worker's report (the worker comes from the report, else from the file's name).
"""

from __future__ import annotations

import concurrent.futures
import datetime as _dt
import re
import socket
from pathlib import Path
from typing import Any

from tpudoctor.cloud_knowledge.uri import split_gs_uri
from tpudoctor.errors import InputError, UsageError
from tpudoctor.findings import Report
from tpudoctor.pod.merge import WorkerOutcome

PLACEHOLDERS = ("{worker}", "{host}")
MAX_REPORTS = 4096
READ_THREADS = 16
CONTENT_TYPES = {"json": "application/json", "junit": "application/xml", "html": "text/html",
                 "markdown": "text/markdown", "text": "text/plain"}


def has_placeholder(path: str | None) -> bool:
    return bool(path) and any(p in path for p in PLACEHOLDERS)


def fill_placeholders(path: str, report: Report) -> str:
    worker = (report.environment or {}).get("worker") or report.target.worker
    if "{worker}" in path and not worker:
        worker = _metadata_worker_number()
    if "{worker}" in path and not worker:
        raise UsageError(f"-o {path}: this machine's worker number is unknown",
                         hint="pass --worker N (or set TPU_WORKER_ID), or use {host} in the file name")
    host = report.host or socket.gethostname()
    return path.replace("{worker}", _safe(str(worker or ""))).replace("{host}", _safe(host))


def _metadata_worker_number() -> str | None:
    """This TPU VM's worker number from the metadata server, when the run did not read it (steps 2-5 only)."""
    from tpudoctor.gcp.metadata import MetadataClient, MetadataUnavailable

    try:
        value = MetadataClient().get("instance/attributes/agent-worker-number")
    except MetadataUnavailable:
        return None
    return value.strip() if value and value.strip().isdigit() else None


def _safe(part: str) -> str:
    """A path component: no separators or parent references can come in through a host name."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", part).lstrip(".") or "_"


def write_report(path: str, text: str, *, fmt: str, api_timeout_s: float) -> None:
    """``-o``: a local file through the safe writer, or one object in GCS."""
    from tpudoctor.output import write_text

    if not path.startswith("gs://"):
        write_text(path, text)
        return
    bucket, name = split_gs_uri(path)
    if not name or name.endswith("/"):
        raise UsageError(f"-o {path}: give an object name, e.g. gs://{bucket}/reports/{{worker}}.json")
    api = _storage(api_timeout_s, on_gce=True)
    from tpudoctor.gcp.errors import ApiCallFailed

    try:
        api.put_text(bucket, name, text, CONTENT_TYPES.get(fmt, "text/plain"))
    except ApiCallFailed as exc:
        raise InputError(f"cannot write {path}: {exc.failure.message}",
                         hint="the report was not saved; check the bucket and that this identity may create objects") from None


def _storage(api_timeout_s: float, *, on_gce: bool):
    from tpudoctor.gcp.errors import ApiCallFailed
    from tpudoctor.gcp.storage import storage_for_caller

    try:
        return storage_for_caller(timeout_s=api_timeout_s, on_gce=on_gce)[0]
    except ApiCallFailed as exc:
        raise InputError(f"no access to Cloud Storage: {exc.failure.message}",
                         hint="run 'gcloud auth application-default login'") from None


def read_reports(sources: list[str], *, api_timeout_s: float = 30.0) -> list[WorkerOutcome]:
    """Every worker report named by ``sources`` (files, folders, gs:// prefixes or objects)."""
    items: list[tuple[str, Any]] = []  # (source name, reader returning (bytes, created))
    for source in sources:
        if source.startswith("gs://"):
            items += _gcs_items(source, api_timeout_s)
        else:
            items += _local_items(source)
    if not items:
        raise InputError(f"no reports found in {', '.join(sources)}",
                         hint="each worker writes one with: tpudoctor check --format json -o DIR/{worker}.json")
    if len(items) > MAX_REPORTS:
        raise InputError(f"{len(items)} reports: more than {MAX_REPORTS} workers; merge fewer at once")
    if not any(source.startswith("gs://") for source in sources):
        return [_read_one(item) for item in items]  # local files: threads would only add start-up cost
    with concurrent.futures.ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
        return list(pool.map(_read_one, items))


def _read_one(item: tuple[str, Any]) -> WorkerOutcome:
    """A report that cannot be read is a finding about that worker; the other reports still merge."""
    from tpudoctor.findings import Remediation, Status
    from tpudoctor.pod.documents import report_from_bytes
    from tpudoctor.pod.merge import worker_problem
    from tpudoctor.pod.slice_checks import REPORT_READABLE

    name, reader = item
    try:
        data, created = reader()
        report, document = report_from_bytes(data, name)
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


def _gcs_items(uri: str, api_timeout_s: float) -> list[tuple[str, Any]]:
    from tpudoctor.gcp.errors import ApiCallFailed

    bucket, name = split_gs_uri(uri)
    api = _storage(api_timeout_s, on_gce=True)
    try:
        if name.endswith(".json"):
            objects = [o for o in api.list_objects(bucket, name, limit=2)[0] if o["name"] == name]
        else:
            prefix = name if not name or name.endswith("/") else name + "/"
            objects, truncated = api.list_objects(bucket, prefix, limit=MAX_REPORTS)
            if truncated:
                raise InputError(f"{uri}: more than {MAX_REPORTS} objects; merge a narrower prefix")
            objects = [o for o in objects if o["name"].endswith(".json") and "/" not in o["name"][len(prefix):]]
    except ApiCallFailed as exc:
        raise InputError(f"cannot list {uri}: {exc.failure.message}") from None

    def reader(obj: dict[str, Any]):
        def read() -> tuple[bytes, Any]:
            try:
                created = obj.get("created")
                return api.read_object(bucket, obj["name"]), _dt.datetime.fromisoformat(created) if created else None
            except ApiCallFailed as exc:
                raise InputError(f"cannot read gs://{bucket}/{obj['name']}: {exc.failure.message}") from None
        return read

    return [(f"gs://{bucket}/{o['name']}", reader(o)) for o in objects]

