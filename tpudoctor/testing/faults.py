"""Fault injection for the loopback fakes: one proxy that breaks any HTTP fake the same ways.

>>> with FakeTpuApi() as api, FaultProxy(api.url, "half") as proxy:
...     os.environ["TPUDOCTOR_TPU_ENDPOINT"] = proxy.url   # every answer is cut short

Modes (``HTTP_FAULTS``), applied to every request, as a broken network or service would:

* ``slow``: waits ``delay_s`` (past any sane client timeout) before forwarding;
* ``reset``: closes the connection with a TCP RST, nothing answered;
* ``429``: a rate-limit storm, every request answered 429 RESOURCE_EXHAUSTED;
* ``500``: every request answered 500 INTERNAL;
* ``malformed``: 200 with a JSON body that does not parse;
* ``half``: 200 promising more bytes (Content-Length) than it sends, then closes.

``dns`` needs no server: point the client at ``UNRESOLVABLE_URL``. Cloud Monitoring speaks gRPC,
so ``FakeMonitoringServer.fault`` and ``TcpFaultProxy`` give it the same modes.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Any
from urllib.parse import urlparse

from tpudoctor.testing.loopback import LoopbackServer, forward_http, google_error, read_body, send

HTTP_FAULTS = ("slow", "reset", "429", "500", "malformed", "half")
ALL_FAULTS = (*HTTP_FAULTS, "dns")
UNRESOLVABLE_HOST = "tpudoctor-nonexistent.invalid"  # .invalid never resolves (RFC 2606)
UNRESOLVABLE_URL = f"http://{UNRESOLVABLE_HOST}:1"
MALFORMED_JSON = b'{"name": "projects/p/locations/z/nodes/n", "state": READY, ["unterminated'
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "server", "date"}


def reset_connection(sock: socket.socket) -> None:
    """Close with RST rather than FIN: the peer sees 'connection reset by peer'."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    except OSError:
        pass


class FaultProxy(LoopbackServer):
    """Forwards to ``upstream`` (``http://host:port``) and injects ``mode`` into every exchange.

    ``mode=None`` forwards faithfully; ``extra_headers`` go on every answer (the metadata
    server's ``Metadata-Flavor``, say). ``requests`` records what reached the proxy.
    """

    def __init__(self, upstream: str, mode: str | None, *, delay_s: float = 30.0,
                 extra_headers: dict[str, str] | None = None, error_message: str | None = None):
        super().__init__()
        if mode not in (None, *HTTP_FAULTS):
            raise ValueError(f"unknown fault mode {mode!r}; one of {HTTP_FAULTS}")
        parsed = urlparse(upstream if "://" in upstream else f"http://{upstream}")
        self.upstream_host, self.upstream_port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self.mode = mode
        self.delay_s = delay_s
        self.extra_headers = extra_headers or {}
        self.error_message = error_message
        self.requests: list[str] = []
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()  # wakes 'slow' handlers so the server shuts down at once
        super().stop()

    def handle(self, handler, method: str) -> None:
        self.requests.append(f"{method} {handler.path}")
        body = read_body(handler)
        mode = self.mode
        if mode == "slow":
            if self._stopping.wait(self.delay_s):  # the proxy is going away: so may its upstream be
                handler.close_connection = True
                return
        elif mode == "reset":
            handler.close_connection = True
            reset_connection(handler.connection)
            return
        elif mode in ("429", "500"):
            status = int(mode)
            message = self.error_message or f"injected HTTP {status}"
            send(handler, status, google_error(status, message), headers=self.extra_headers)
            return
        elif mode == "malformed":
            send(handler, 200, MALFORMED_JSON, content_type="application/json", headers=self.extra_headers)
            return
        elif mode == "half":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(MALFORMED_JSON) + 4096))
            for key, value in self.extra_headers.items():
                handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.write(MALFORMED_JSON[:24])
            handler.wfile.flush()
            handler.close_connection = True
            try:
                handler.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        try:
            status, headers, data = forward_http(self.upstream_host, self.upstream_port, method, handler.path,
                                                 handler.headers, body)
        except OSError as exc:  # the upstream fake is gone (torn down first): a gateway error, not a thread traceback
            send(handler, 502, google_error(502, f"upstream unreachable: {exc}"), headers=self.extra_headers)
            return
        send(handler, status, data, content_type=headers.get("content-type"),
             headers={**{k: v for k, v in headers.items() if k not in _HOP_HEADERS and k != "content-type"},
                      **self.extra_headers})


class TcpFaultProxy:
    """A byte-level proxy on 127.0.0.1 for protocols the HTTP proxy cannot speak (gRPC).

    ``reset`` answers every connection with a RST; ``half`` passes the first ``cut_after``
    bytes of the server's answer and then drops the connection; ``slow`` holds every
    connection open without forwarding anything.
    """

    MODES = ("reset", "half", "slow")

    def __init__(self, upstream_port: int, mode: str, *, cut_after: int = 64):
        if mode not in self.MODES:
            raise ValueError(f"unknown TCP fault mode {mode!r}; one of {self.MODES}")
        self.upstream_port = upstream_port
        self.mode = mode
        self.cut_after = cut_after
        self.connections = 0
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.05)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []

    @property
    def port(self) -> int:
        return self._listener.getsockname()[1]

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> TcpFaultProxy:
        thread = threading.Thread(target=self._accept_loop, daemon=True, name="tcp-fault-proxy")
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stopping.set()
        for sock in list(self._sockets):
            try:
                sock.close()
            except OSError:
                pass
        self._listener.close()

    def __enter__(self) -> TcpFaultProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            if self.mode == "reset":
                reset_connection(client)
                continue
            self._sockets.append(client)
            if self.mode == "slow":
                continue  # never read, never answer: the client's deadline must fire
            threading.Thread(target=self._pipe, args=(client,), daemon=True).start()

    def _pipe(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
        except OSError:
            reset_connection(client)
            return
        self._sockets.append(upstream)
        sent = [0]

        def pump(src: socket.socket, dst: socket.socket, limit: int | None) -> None:
            try:
                while not self._stopping.is_set():
                    data = src.recv(65536)
                    if not data:
                        break
                    if limit is not None and sent[0] + len(data) >= limit:
                        dst.sendall(data[: max(0, limit - sent[0])])
                        break
                    dst.sendall(data)
                    if limit is not None:
                        sent[0] += len(data)
            except OSError:
                pass
            for sock in (client, upstream):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                try:
                    sock.close()
                except OSError:
                    pass

        threading.Thread(target=pump, args=(client, upstream, None), daemon=True).start()
        pump(upstream, client, self.cut_after)


def wait_for(predicate, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
