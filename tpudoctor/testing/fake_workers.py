"""Fake TPU VM workers for the multi-host reachability check: one tiny SSH-banner server per worker.

>>> with FakeWorkers(64, dead={5}, slow={9}, hung={12}) as workers:
...     node["networkEndpoints"] = workers.endpoints()      # 127.0.0.2 ... 127.0.0.65
...     os.environ["TPUDOCTOR_WORKER_PROBE_PORT"] = str(workers.port)

Worker ``i`` listens on loopback address ``127.0.0.{i + 2}`` (all of 127/8 is loopback on Linux),
all on one port, so the probe addresses look like a real node's. ``dead`` workers do not listen
(connection refused); ``slow`` ones send the banner after ``slow_s``; ``hung`` ones accept and
never answer.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Set as AbstractSet
from typing import Any

BANNER = b"SSH-2.0-OpenSSH_8.9p1 Ubuntu-3ubuntu0.6\r\n"


class FakeWorkers:
    def __init__(self, count: int, *, dead: AbstractSet[int] = frozenset(), slow: AbstractSet[int] = frozenset(),
                 hung: AbstractSet[int] = frozenset(), slow_s: float = 1.5):
        if count > 250:
            raise ValueError("at most 250 fake workers (127.0.0.2 .. 127.0.0.251)")
        self.count, self.dead, self.slow, self.hung, self.slow_s = count, set(dead), set(slow), set(hung), slow_s
        self._stopping = threading.Event()
        self._listeners: dict[int, socket.socket] = {}
        self.port = self._bind_all()

    def ip(self, worker: int) -> str:
        return f"127.0.0.{worker + 2}"

    def endpoints(self) -> list[dict[str, Any]]:
        """The node's ``networkEndpoints`` as the TPU API returns them."""
        return [{"ipAddress": self.ip(i), "port": 8470} for i in range(self.count)]

    def _bind_all(self) -> int:
        for _attempt in range(20):
            probe = socket.socket()
            probe.bind(("127.0.0.2", 0))
            port = probe.getsockname()[1]
            probe.close()
            try:
                for i in range(self.count):
                    if i in self.dead:
                        continue
                    sock = socket.socket()
                    sock.bind((self.ip(i), port))
                    sock.listen(16)
                    sock.settimeout(0.05)
                    self._listeners[i] = sock
                return port
            except OSError:
                for sock in self._listeners.values():
                    sock.close()
                self._listeners.clear()
        raise OSError("no port free on every fake worker address")

    def start(self) -> FakeWorkers:
        for i, sock in self._listeners.items():
            threading.Thread(target=self._serve, args=(i, sock), daemon=True, name=f"fake-worker-{i}").start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        for sock in self._listeners.values():
            sock.close()

    def __enter__(self) -> FakeWorkers:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _serve(self, worker: int, sock: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._answer, args=(worker, conn), daemon=True).start()

    def _answer(self, worker: int, conn: socket.socket) -> None:
        with conn:
            if worker in self.hung:
                self._stopping.wait(30)
                return
            if worker in self.slow:
                self._stopping.wait(self.slow_s)
            try:
                conn.sendall(BANNER)
            except OSError:
                pass
