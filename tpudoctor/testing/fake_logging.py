"""A local Cloud Logging REST fake for tests: the real ``google-cloud-logging`` client talks to it.

>>> with FakeLoggingServer() as fake:
...     fake.add_entry(text="Unavailable: Socket closed", severity="ERROR", node_id="my-tpu")
...     client = fake.client(project="p")   # or set TPUDOCTOR_LOGGING_ENDPOINT=fake.endpoint
...     list(client.list_entries(filter_='severity>=WARNING'))

It serves ``POST /v2/entries:list`` on 127.0.0.1 (a free port), understands the filter
clauses tpudoctor sends (``field op "value"`` joined by AND: resource.type, resource.labels.*,
severity, timestamp), pages with ``nextPageToken``, and records every request body so tests
can assert what was asked. ``POST /v2/entries:write`` stores what a writer sends (the request's
logName, resource and labels fill in what an entry leaves out; no timestamp means the time it
arrived), so a real writer such as ml-goodput-measurement's recorder can log into it. It binds
loopback only and stops on ``__exit__``.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SEVERITY_ORDER = ["DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"]
SEVERITY_NUMBERS = {0: "DEFAULT", 100: "DEBUG", 200: "INFO", 300: "NOTICE", 400: "WARNING", 500: "ERROR",
                    600: "CRITICAL", 700: "ALERT", 800: "EMERGENCY"}
_CLAUSE = re.compile(r'^\s*([A-Za-z_.]+)\s*(>=|<=|=|>|<|:)\s*"?([^"]*)"?\s*$')


def _parse_time(text: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _field(entry: dict[str, Any], path: str) -> Any:
    value: Any = entry
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _clause_matches(entry: dict[str, Any], field: str, op: str, wanted: str) -> bool:
    value = _field(entry, field)
    if value is None:
        return False
    have: Any
    want: Any
    if field == "severity":
        have, want = SEVERITY_ORDER.index(str(value)), SEVERITY_ORDER.index(wanted)
    elif field == "timestamp":
        have, want = _parse_time(str(value)), _parse_time(wanted)
    else:
        have, want = str(value), wanted
    if op == ":":  # Cloud Logging's "has": a substring for text fields
        return str(want) in str(have)
    return {"=": have == want, ">=": have >= want, "<=": have <= want, ">": have > want, "<": have < want}[op]


def filter_matches(entry: dict[str, Any], filter_text: str) -> bool:
    """Evaluate an AND of simple clauses; an unknown clause shape is an error, not a silent match."""
    if not filter_text.strip():
        return True
    for clause in re.split(r"\s+AND\s+", filter_text.strip()):
        match = _CLAUSE.match(clause.strip("() "))
        if match is None:
            raise ValueError(f"fake Cloud Logging cannot evaluate filter clause {clause!r}")
        if not _clause_matches(entry, *match.groups()):
            return False
    return True


class FakeLoggingServer:
    def __init__(self, *, page_size: int = 50):
        self.entries: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.page_size = page_size
        self.fail_with: tuple[int, str] | None = None
        """Set to (status, message) to make every request fail (403, say)."""
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # entries ---------------------------------------------------------------------------------
    def add_entry(
        self,
        *,
        text: str | None = None,
        json_payload: dict[str, Any] | None = None,
        severity: str = "ERROR",
        timestamp: _dt.datetime | None = None,
        node_id: str = "my-tpu",
        zone: str = "us-central2-b",
        worker_id: str = "0",
        project: str = "my-project",
        log_id: str = "tpu.googleapis.com%2Fruntime_monitor",
        resource: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``resource`` replaces the TPU worker resource (a GKE container's, a global one)."""
        stamp = timestamp or _dt.datetime.now(_dt.timezone.utc)
        entry: dict[str, Any] = {
            "logName": f"projects/{project}/logs/{log_id}",
            "resource": resource or {"type": "tpu_worker", "labels": {
                "project_id": project, "zone": zone, "node_id": node_id, "worker_id": worker_id}},
            "severity": severity,
            "timestamp": stamp.astimezone(_dt.timezone.utc).isoformat().replace("+00:00", "Z"),
            "insertId": f"fake-{len(self.entries)}",
        }
        if json_payload is not None:
            entry["jsonPayload"] = json_payload
        else:
            entry["textPayload"] = text or ""
        self.entries.append(entry)
        return entry

    def write_entries(self, body: dict[str, Any]) -> None:
        """Store an ``entries:write`` request's entries as Cloud Logging would (defaults from the request)."""
        now = _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")
        for sent in body.get("entries") or []:
            entry = dict(sent)
            entry.setdefault("logName", body.get("logName", ""))
            entry.setdefault("resource", body.get("resource") or {"type": "global", "labels": {}})
            if body.get("labels"):
                entry["labels"] = {**body["labels"], **(entry.get("labels") or {})}
            # a writer may send the LogSeverity number (the logging handler sends 200); Cloud Logging stores the name
            severity = entry.get("severity", "DEFAULT")
            entry["severity"] = SEVERITY_NUMBERS.get(severity, severity) if isinstance(severity, int) else severity
            entry.setdefault("timestamp", now)
            entry.setdefault("insertId", f"fake-{len(self.entries)}")
            self.entries.append(entry)

    # server ----------------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host.decode() if isinstance(host, bytes) else host}:{port}"

    def client(self, project: str = "my-project"):
        """A real ``google.cloud.logging.Client`` pointed at this fake."""
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import logging

        return logging.Client(project=project, credentials=AnonymousCredentials(), _use_grpc=False,
                              client_options={"api_endpoint": self.endpoint})

    def start(self) -> FakeLoggingServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append({"path": self.path, "body": body})
                if not self.path.startswith(("/v2/entries:list", "/v2/entries:write")):
                    return self._reply(404, {"error": {"code": 404, "message": f"no route {self.path}"}})
                if fake.fail_with:
                    code, message = fake.fail_with
                    return self._reply(code, {"error": {"code": code, "message": message}})
                if self.path.startswith("/v2/entries:write"):
                    with fake._lock:
                        fake.write_entries(body)
                    return self._reply(200, {})
                try:
                    matched = [e for e in fake.entries if filter_matches(e, body.get("filter", ""))]
                except ValueError as exc:
                    return self._reply(400, {"error": {"code": 400, "message": str(exc)}})
                # Cloud Logging orders by timestamp (ascending unless asked otherwise); ties keep arrival order
                matched.sort(key=lambda e: _parse_time(str(e["timestamp"])))
                if "desc" in str(body.get("orderBy", "")):
                    matched.reverse()
                start = int(body.get("pageToken") or 0)
                size = min(int(body.get("pageSize") or fake.page_size), fake.page_size)
                page = matched[start:start + size]
                reply: dict[str, Any] = {"entries": page}
                if start + size < len(matched):
                    reply["nextPageToken"] = str(start + size)
                self._reply(200, reply)

            def _reply(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="fake-logging")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLoggingServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
