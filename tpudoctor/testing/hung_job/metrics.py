"""The job's metrics writer: the training loop records each step's loss, and a background thread
appends what was recorded to a metrics file every half second."""

from __future__ import annotations

import json
import threading

FLUSH_EVERY_S = 0.5


class MetricsWriter:
    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._pending: list[dict] = []
        self._thread = threading.Thread(target=self._flush_forever, name="metrics-writer", daemon=True)
        self._thread.start()

    def record(self, step: int, loss: float) -> None:
        with self._lock:
            self._pending.append({"step": step, "loss": loss})

    def _flush_forever(self) -> None:
        stop = threading.Event()
        while not stop.wait(FLUSH_EVERY_S):
            self.flush()

    def flush(self) -> None:
        with self._lock:  # held while writing, so no record is lost or written twice
            if not self._pending:
                return
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.writelines(json.dumps(row) + "\n" for row in self._pending)
            self._pending.clear()
