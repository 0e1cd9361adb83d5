"""A job's logs from Cloud Logging (a TPU node's workers or a GKE workload's pods), through the same
``google-cloud-logging`` client as ``tpudoctor check``; and, where the job used ml-goodput-measurement,
its recorder's entries, read the same way (``recorder.py`` makes their account) and set against the
log-derived account.

Entries are streamed page by page (``LoggingApi.iter_entries``) into the line readers, each line carrying
the entry's timestamp and worker, so Cloud Logging is read like a file with every worker labelled.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Iterator
from typing import Any

from tpudoctor.errors import TpudoctorError
from tpudoctor.goodput.buckets import BUCKETS
from tpudoctor.goodput.lines import read_events
from tpudoctor.goodput.readers import Event, LineReader
from tpudoctor.logs.clock import Clock

PAGE_SIZE = 1000
MAX_ENTRIES = 500_000


@dataclasses.dataclass
class CloudTarget:
    project: str
    since_s: float
    tpu: str | None = None
    zone: str | None = None
    gke_cluster: str | None = None
    gke_namespace: str | None = None
    gke_workload: str | None = None
    worker: str | None = None

    def log_filter(self, now: _dt.datetime) -> str:
        start = (now - _dt.timedelta(seconds=self.since_s)).astimezone(_dt.timezone.utc)
        since = f'timestamp>="{start.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}"'
        if self.tpu:
            clauses = ['resource.type="tpu_worker"', f'resource.labels.node_id="{self.tpu}"']
            if self.zone:
                clauses.append(f'resource.labels.zone="{self.zone}"')
            if self.worker not in (None, ""):
                clauses.append(f'resource.labels.worker_id="{self.worker}"')
        else:
            clauses = ['resource.type="k8s_container"', f'resource.labels.cluster_name="{self.gke_cluster}"']
            if self.gke_namespace:
                clauses.append(f'resource.labels.namespace_name="{self.gke_namespace}"')
            clauses.append(f'resource.labels.pod_name:"{self.gke_workload}-"')  # JobSet pods: <workload>-slice-job-...
        return " AND ".join(clauses + [since])

    @property
    def name(self) -> str:
        return f"cloud-logging:{self.tpu}" if self.tpu else f"cloud-logging:{self.gke_cluster}/{self.gke_workload}"


def _api(session):
    """The session's Cloud Logging; no credentials is an ``InputError`` with the fix."""
    from tpudoctor.gcp.errors import ApiCallFailed, user_error

    try:
        return session.logging
    except ApiCallFailed as exc:
        raise user_error(exc.failure, "cannot read Cloud Logging") from None


def _failed(exc: Any, what: str, api: Any, project: str) -> TpudoctorError:
    from tpudoctor.cloud_knowledge.iam import LOGGING_PERMISSION
    from tpudoctor.gcp.errors import user_error

    return user_error(exc.failure, f"Cloud Logging did not give {what}", identity=api.identity, project=project,
                      permission=LOGGING_PERMISSION)


def _worker(entry: Any) -> str | None:
    labels = (entry.resource.labels or {}) if entry.resource else {}
    if "worker_id" in labels:
        return f"worker-{labels['worker_id']}"
    return labels.get("pod_name")


def entry_lines(entries: Iterator[Any], counter: dict[str, Any]) -> Iterator[tuple[str, float | None, str | None]]:
    from tpudoctor.providers.cloud_logging import entry_text

    for entry in entries:
        counter["entries"] = counter.get("entries", 0) + 1
        t = entry.timestamp.timestamp() if entry.timestamp else None
        worker = _worker(entry)
        for line in entry_text(entry.payload).splitlines() or [""]:
            yield line, t, worker


def job_events(target: CloudTarget, *, readers: tuple[LineReader, ...], session,
               now: _dt.datetime | None = None) -> tuple[str, Iterator[Event], dict[str, Any]]:
    """(source name, events, stats) for the job's log entries, read through the run's Google Cloud
    ``session``; stats fill in as the events are read."""
    from tpudoctor.gcp.errors import ApiCallFailed

    api = _api(session)
    query = target.log_filter(now or _dt.datetime.now(_dt.timezone.utc))
    stats: dict[str, Any] = {"filter": query}

    def events() -> Iterator[Event]:
        try:
            yield from read_events(entry_lines(api.iter_entries(target.project, query, page_size=PAGE_SIZE,
                                                                max_entries=MAX_ENTRIES),
                                               stats), target.name, clock=Clock(), readers=readers, stats=stats)
        except ApiCallFailed as exc:
            raise _failed(exc, "the job's log entries", api, target.project) from None

    return target.name, events(), stats


def recorder_filter(project: str, log_name: str, job_name: str, since_s: float, now: _dt.datetime) -> str:
    start = (now - _dt.timedelta(seconds=since_s)).astimezone(_dt.timezone.utc)
    return " AND ".join([f'logName="projects/{project}/logs/{log_name}"', "severity=INFO",
                         f'jsonPayload.job_name="{job_name}"',
                         f'timestamp>="{start.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}"'])


def recorder_entries(project: str, log_name: str, job_name: str, since_s: float, *, session,
                     now: _dt.datetime | None = None) -> list[dict[str, Any]]:
    """The recorder's payloads (one small dict per record), oldest first, read through ``session``."""
    from tpudoctor.gcp.errors import ApiCallFailed

    api = _api(session)
    query = recorder_filter(project, log_name, job_name, since_s, now or _dt.datetime.now(_dt.timezone.utc))
    try:
        return [dict(e.payload) for e in api.iter_entries(project, query, page_size=PAGE_SIZE,
                                                          max_entries=MAX_ENTRIES)
                if isinstance(e.payload, dict)]
    except ApiCallFailed as exc:
        raise _failed(exc, "ml-goodput-measurement's entries", api, project) from None


COMPARED = ("wall_s", "productive_s", "ettr", "steps", "restarts", "repeated_steps")
TOLERANCE = {"wall_s": 0.02, "productive_s": 0.02, "ettr": 0.02}
"""Relative differences (2 %) within which two accounts agree; counts must be equal."""


def compare_accounts(from_log: dict[str, Any], from_recorder: dict[str, Any]) -> dict[str, Any]:
    """Where the log's account and the recorder's differ: each figure and each bucket's percent."""
    rows = []
    for key in COMPARED:
        a, b = from_log.get(key), from_recorder.get(key)
        rows.append(_row(key, a, b, TOLERANCE.get(key)))
    for bucket in BUCKETS:
        a = ((from_log.get("badput") or {}).get(bucket) or {}).get("percent")
        b = ((from_recorder.get("badput") or {}).get(bucket) or {}).get("percent")
        rows.append(_row(f"{bucket} %", a, b, None, points=1.0))
    differ = [r for r in rows if r["agree"] is False]
    lines = [f"{r['figure']}: log {r['log']}, recorder {r['recorder']}" for r in differ] or \
        ["the log's account and the recorder's agree (within 2 % and 1 point)"]
    return {"rows": rows, "differ": [r["figure"] for r in differ], "lines": lines}


def _row(name: str, a: Any, b: Any, rel: float | None, points: float | None = None) -> dict[str, Any]:
    if a is None or b is None:
        agree = None
    elif points is not None:
        agree = abs(float(a) - float(b)) <= points
    elif rel is not None:
        agree = abs(float(a) - float(b)) <= rel * max(abs(float(b)), 1e-9)
    else:
        agree = a == b
    return {"figure": name, "log": a, "recorder": b, "agree": agree}
