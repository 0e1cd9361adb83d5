"""A threaded HTTP server on 127.0.0.1 and a free port, started and stopped by a ``with`` block."""

from __future__ import annotations

import dataclasses
import http.client
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackServer:
    """Subclasses implement ``handle(handler, method)``; ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _dispatch(self, method: str) -> None:
                try:
                    owner.handle(self, method)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._dispatch("GET")

            def do_POST(self) -> None:
                self._dispatch("POST")

            def do_PUT(self) -> None:
                self._dispatch("PUT")

            def do_PATCH(self) -> None:
                self._dispatch("PATCH")

            def do_DELETE(self) -> None:
                self._dispatch("DELETE")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def start(self) -> LoopbackServer:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True,
                                        name=type(self).__name__)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        raise NotImplementedError


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes | str | dict | list,
         content_type: str | None = None, headers: dict[str, str] | None = None) -> None:
    if isinstance(body, (dict, list)):
        data, content_type = json.dumps(body).encode(), content_type or "application/json"
    elif isinstance(body, str):
        data, content_type = body.encode(), content_type or "text/plain"
    else:
        data, content_type = body, content_type or "application/octet-stream"
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(data)


def google_error(status: int, message: str, *, permission: str | None = None, domain: str = "googleapis.com") -> dict:
    """The JSON error body Google REST APIs send (google.rpc.Status with ErrorInfo details)."""
    names = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
             500: "INTERNAL", 503: "UNAVAILABLE"}
    error: dict[str, Any] = {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}
    if permission:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "IAM_PERMISSION_DENIED",
                             "domain": domain, "metadata": {"permission": permission}}]
    if status != 403:
        error["errors"] = [{"message": message, "domain": "global", "reason": error["status"].lower()}]
    return {"error": error}


@dataclasses.dataclass
class Fault:
    """An error answer scheduled for the next ``times`` requests whose path contains ``path_contains``."""

    status: int
    times: int
    path_contains: str | None = None
    permission: str | None = None
    message: str | None = None
    delay_s: float = 0.0


class FaultQueue:
    """Scheduled error answers for a fake, taken in order, thread-safe."""

    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> None:
        with self._lock:
            self.faults.append(fault)

    def take(self, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and (fault.path_contains is None or fault.path_contains in path):
                    fault.times -= 1
                    return fault
        return None


def forward_http(host: str, port: int, method: str, target: str, headers: Any, body: bytes,
                 *, timeout_s: float = 30.0) -> tuple[int, dict[str, str], bytes]:
    """One request passed on to ``host:port``: (status, lower-cased headers, body)."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        out = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection", "content-length")}
        conn.request(method, target, body=body or None, headers=out)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()
