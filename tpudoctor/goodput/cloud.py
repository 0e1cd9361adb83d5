"""A job's logs from Cloud Logging (a TPU node's workers or a GKE workload's pods), through the same
``google-cloud-logging`` client as ``tpudoctor check``; and, where the job used ml-goodput-measurement,
its recorder's entries, read the same way and set against the log-derived account.

Entries are streamed page by page (``LoggingApi.iter_entries``) into the line readers, each line carrying
the entry's timestamp and worker, so Cloud Logging is read like a file with every worker labelled.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Iterator
from typing import Any

from tpudoctor.errors import TpudoctorError
from tpudoctor.goodput.lines import Event, Kind, LineReader, read_events
from tpudoctor.goodput.stamps import Clock
from tpudoctor.goodput.timeline import BUCKETS, Timeline

PAGE_SIZE = 1000
MAX_ENTRIES = 500_000
# ml-goodput-measurement's recorder keys (goodput.py) and its Orbax checkpoint logger's (checkpoint_badput_calculator)
JOB_START, JOB_END, STEP_START, STEP_COUNT = "job_start_time", "job_end_time", "step_start_time", "step_count"
INTERVALS = {"tpu_init": ("tpu_init_start_time", "tpu_init_end_time", "TPU_INITIALIZATION"),
             "training_prep": ("training_prep_start_time", "training_prep_end_time", "TRAINING_PREP"),
             "data_loading": ("data_loading_start_time", "data_loading_end_time", "DATA_LOADING_SYNC")}
CKPT_SAVE_S, CKPT_RESTORE_S = "checkpoint_manager_blocking_duration_secs", "checkpoint_manager_duration_secs"


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


def recorder_events(payloads: list[dict[str, Any]], source: str) -> list[Event]:
    """The recorder's entries as timeline events: job start/end, step starts, its intervals, checkpoints.

    A recorded step start is the end of the step before it, so step ``n``'s start becomes a step line for
    ``n - 1``; the first step start after a job start ends training preparation (as the library counts
    it, the first step's excess is PROGRAM_STARTUP); the intervals become the same marks the log readers give.
    """
    out: list[Event] = []

    def ev(kind: Kind, t: float | None, **kw: Any) -> None:
        out.append(Event(kind, t, framework="ml-goodput-measurement", source=source, text=str(kw.pop("text", "")),
                         **kw))

    loop_started = False
    for p in payloads:
        if JOB_START in p:
            ev(Kind.START, float(p[JOB_START]), text="job_start_time")
            loop_started = False
        if STEP_START in p and STEP_COUNT in p:
            if not loop_started:  # the loop's first step start: training preparation ends here
                ev(Kind.PREP_END, float(p[STEP_START]), text="first step_start_time")
                loop_started = True
            else:
                ev(Kind.STEP, float(p[STEP_START]), step=int(p[STEP_COUNT]) - 1, text="step_start_time")
        for _name, (start_key, end_key, bucket) in INTERVALS.items():
            if end_key in p:
                kind = {"TPU_INITIALIZATION": Kind.INIT_END, "TRAINING_PREP": Kind.PREP_END,
                        "DATA_LOADING_SYNC": Kind.DATA_END}[bucket]
                ev(kind, float(p[end_key]), text=end_key)
            elif start_key in p and bucket == "DATA_LOADING_SYNC":
                ev(Kind.DATA_START, float(p[start_key]), text=start_key)
        if p.get("event_type") == "save" and p.get(CKPT_SAVE_S) is not None:
            start = p.get("checkpoint_manager_blocking_start_time")
            ev(Kind.SAVE_START, float(start) if start is not None else None, step=_step(p), mode="sync",
               text="checkpoint save")
            ev(Kind.SAVE_BLOCKING_END, None, step=_step(p), seconds=float(p[CKPT_SAVE_S]), mode="sync",
               text="checkpoint save")
            ev(Kind.SAVE_END, None, step=_step(p), seconds=float(p[CKPT_SAVE_S]), mode="sync",
               text="checkpoint save")
        if p.get("event_type") in ("restore", "emergency_restore") and p.get(CKPT_RESTORE_S) is not None:
            ev(Kind.RESTORE_END, None, step=_step(p), seconds=float(p[CKPT_RESTORE_S]), text="checkpoint restore")
        if JOB_END in p:
            ev(Kind.EXIT, float(p[JOB_END]), text="job_end_time")
    return out


def _step(p: dict[str, Any]) -> int | None:
    try:
        return int(p.get("step"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def recorder_account(payloads: list[dict[str, Any]], source: str) -> dict[str, Any]:
    """The account rebuilt from the recorder's entries alone, with the same rules as a log's."""
    from tpudoctor.goodput.account import account

    events = recorder_events(payloads, source)
    times = [e.t for e in events if e.t is not None]
    timeline = Timeline()
    timeline.feed(events, source)
    timeline.finish({source: max(times) if times else None})
    return account(timeline, wall_start=min(times) if times else None, wall_end=max(times) if times else None)


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
