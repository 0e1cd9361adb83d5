"""The TPU node's entries in Cloud Logging (resource ``tpu_worker``), diagnosed like a log file."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, GatherError, Unavailable
from tpudoctor.findings import Scope
from tpudoctor.gcp.errors import PERMISSION_DENIED, ApiCallFailed, api_cause
from tpudoctor.provider import FactProvider
from tpudoctor.providers import read_access
from tpudoctor.providers.log_files import scan_summary
from tpudoctor.providers.node_identity import NODE_FACTS, resolve_node_identity

MAX_ENTRIES = 5000
PAGE_SIZE = 1000
MIN_SEVERITY = "WARNING"


def build_filter(identity: Mapping[str, Any], since_s: float, now: _dt.datetime) -> str:
    """Always with an explicit timestamp: without one the client library silently adds 24 h."""
    start = (now - _dt.timedelta(seconds=since_s)).astimezone(_dt.timezone.utc)
    clauses = ['resource.type="tpu_worker"', f'resource.labels.node_id="{identity["node_id"]}"']
    if identity.get("zone"):
        clauses.append(f'resource.labels.zone="{identity["zone"]}"')
    if identity.get("worker_id") not in (None, ""):
        clauses.append(f'resource.labels.worker_id="{identity["worker_id"]}"')
    clauses.append(f"severity>={MIN_SEVERITY}")
    clauses.append(f'timestamp>="{start.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}"')
    return " AND ".join(clauses)


def entry_text(payload: Any) -> str:
    if isinstance(payload, str):
        return payload
    if isinstance(payload, Mapping):
        for key in ("message", "msg", "textPayload"):
            if isinstance(payload.get(key), str):
                return payload[key]
        return json.dumps(payload, default=str)
    return "" if payload is None else str(payload)


def entry_event(entry: Any, index: int) -> Any:
    from tpudoctor.logdiag import LogEvent
    from tpudoctor.logdiag.events import MAX_HEAD_LINES
    from tpudoctor.logs.sources import MAX_LINE_CHARS

    lines = [line[:MAX_LINE_CHARS] for line in entry_text(entry.payload).splitlines()[:MAX_HEAD_LINES]] or [""]
    stamp = entry.timestamp.isoformat() if entry.timestamp else None
    return LogEvent(lines, index, index, given_timestamp=stamp, severity=entry.severity, numbered=False)


class CloudLoggingProvider(FactProvider):
    name = "cloud_logging"
    provides = ("logs.cloud", "logs.cloud_access")
    needs = NODE_FACTS
    timeout_s = 60.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        from tpudoctor.logdiag import Diagnoser

        identity = resolve_node_identity(ctx, facts)
        if not identity["project"]:
            return self._both(Unavailable("no project to read Cloud Logging from (give --project, or run on a TPU VM)"))
        if not identity["node_id"]:
            return self._both(Unavailable("no TPU node to read Cloud Logging for (give --tpu NAME)"))
        try:
            api = ctx.cloud.logging
        except ApiCallFailed as exc:
            return self._both(Unavailable(read_access.no_credentials(exc.failure)))
        query = build_filter(identity, ctx.options.since_s, _dt.datetime.now(_dt.timezone.utc))
        try:
            entries = api.entries(identity["project"], query, page_size=PAGE_SIZE, max_entries=MAX_ENTRIES)
        except ApiCallFailed as exc:
            if exc.failure.kind == PERMISSION_DENIED:
                return {"logs.cloud": Unavailable(f"Cloud Logging refused to list entries: {exc.failure.message} "
                                                  "(see LOGS-005)"),
                        "logs.cloud_access": read_access.denied("Cloud Logging", exc.failure,
                                                                project=identity["project"], identity=api.identity)}
            return {"logs.cloud": GatherError(self.name, f"Cloud Logging did not answer: {api_cause(exc)}"),
                    "logs.cloud_access": Unavailable("Cloud Logging did not answer (see LOGS-003)")}
        diagnoser = Diagnoser()
        per_source: dict[str, int] = {}
        for index, entry in enumerate(entries, start=1):
            worker = (entry.resource.labels or {}).get("worker_id", "?") if entry.resource else "?"
            source = f"cloud-logging:{identity['node_id']}/worker-{worker}"
            per_source[source] = per_source.get(source, 0) + 1
            scope = Scope.of(workers=[worker]) if worker != "?" else None  # the entry names its worker
            diagnoser.feed([entry_event(entry, index)], source, scope=scope)
        summary = scan_summary(diagnoser, [{"source": s, "lines": n} for s, n in sorted(per_source.items())])
        summary.update({"filter": query, "entries": sum(per_source.values()),
                        "truncated": sum(per_source.values()) >= MAX_ENTRIES})
        return {"logs.cloud": summary, "logs.cloud_access": read_access.readable("Cloud Logging")}

    def _both(self, value: Any) -> dict[str, Any]:
        return {key: value for key in self.provides}
