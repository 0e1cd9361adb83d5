"""Cloud Storage for tests: ``gcp-storage-emulator`` in-process, behind a small fault proxy.

The emulator stores objects for real but grants every permission and puts every bucket in
"US". The proxy in front of it answers what the emulator cannot: a bucket's location, 403s
for denied permissions (``testIamPermissions`` leaves them out, the matching calls get 403)
and injected failures.

>>> with FakeGcs() as gcs:
...     gcs.create_bucket("bucket", location="EUROPE-WEST4")
...     gcs.upload("bucket", "train/part-0.tfrecord", data)
...     gcs.deny("bucket", "storage.objects.list")
...     os.environ["STORAGE_EMULATOR_HOST"] = gcs.url
"""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
from urllib.parse import unquote, urlparse

from tpudoctor.testing.loopback import (
    Fault,
    FaultQueue,
    LoopbackServer,
    forward_http,
    free_port,
    google_error,
    read_body,
    send,
)

_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "server", "date"}


def _permission_for(method: str, path: str) -> tuple[str | None, str | None]:
    """(bucket, permission) a JSON-API request needs; (None, None) when not a bucket call."""
    patterns = (
        ("GET", r"^/storage/v1/b/(?P<b>[^/]+)$", "storage.buckets.get"),
        ("GET", r"^/storage/v1/b/(?P<b>[^/]+)/o$", "storage.objects.list"),
        ("GET", r"^/(?:download/)?storage/v1/b/(?P<b>[^/]+)/o/.+$", "storage.objects.get"),
        ("POST", r"^/upload/storage/v1/b/(?P<b>[^/]+)/o$", "storage.objects.create"),
        ("POST", r"^/storage/v1/b/(?P<b>[^/]+)/o$", "storage.objects.create"),
        ("DELETE", r"^/storage/v1/b/(?P<b>[^/]+)/o/.+$", "storage.objects.delete"),
    )
    for want_method, pattern, permission in patterns:
        m = re.match(pattern, path)
        if m and method == want_method:
            return unquote(m["b"]), permission
    return None, None


class FakeGcs(LoopbackServer):
    def __init__(self, principal: str = "tpu-sa@p.iam.gserviceaccount.com"):
        super().__init__()
        from gcp_storage_emulator.server import create_server

        logging.getLogger("gcp_storage_emulator").setLevel(logging.WARNING)
        self._emulator_port = free_port()
        self._emulator = create_server("127.0.0.1", self._emulator_port, in_memory=True)
        self.principal = principal
        self.locations: dict[str, tuple[str, str]] = {}
        self.denied: dict[str, set[str]] = {}
        self.faults = FaultQueue()
        self.requests: list[str] = []

    @property
    def emulator_url(self) -> str:
        return f"http://127.0.0.1:{self._emulator_port}"

    def start(self) -> FakeGcs:
        self._emulator.start()
        super().start()
        return self

    def stop(self) -> None:
        super().stop()
        # The emulator's server loop polls for shutdown every 0.5 s; a connection wakes it at once.
        stopper = threading.Thread(target=self._emulator.stop, daemon=True)
        stopper.start()
        while stopper.is_alive():
            try:
                socket.create_connection(("127.0.0.1", self._emulator_port), timeout=0.1).close()
            except OSError:
                pass
            stopper.join(0.02)

    # --- seeding, straight into the emulator with the real client ---------------------------
    def client(self):
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(project="test-project", credentials=AnonymousCredentials(),
                              client_options={"api_endpoint": self.emulator_url})

    def create_bucket(self, name: str, *, location: str = "US") -> None:
        self.client().create_bucket(name)
        location = location.upper()
        kind = "multi-region" if location in {"US", "EU", "ASIA"} else (
            "dual-region" if location in {"NAM4", "EUR4", "ASIA1"} else "region")
        self.locations[name] = (location, kind)

    def upload(self, bucket: str, name: str, data: bytes) -> None:
        self.client().bucket(bucket).blob(name).upload_from_string(data)

    def object_names(self, bucket: str) -> list[str]:
        return [b.name for b in self.client().list_blobs(bucket)]

    # --- what the emulator cannot do ---------------------------------------------------------
    def deny(self, bucket: str, *permissions: str) -> None:
        self.denied.setdefault(bucket, set()).update(permissions)

    def fail(self, status: int, *, times: int = 1, path_contains: str | None = None, delay_s: float = 0.0) -> None:
        self.faults.add(Fault(status, times, path_contains, delay_s=delay_s))

    def handle(self, handler, method: str) -> None:
        import time

        parsed = urlparse(handler.path)
        path = parsed.path
        self.requests.append(f"{method} {path}")
        body = read_body(handler)
        fault = self.faults.take(path)
        if fault is not None:
            if fault.delay_s:
                time.sleep(fault.delay_s)
            send(handler, fault.status, google_error(fault.status, f"injected HTTP {fault.status}"))
            return
        bucket, permission = _permission_for(method, path)
        if bucket and permission in self.denied.get(bucket, set()):
            send(handler, 403, google_error(
                403, f"{self.principal} does not have {permission} access to the Google Cloud Storage "
                     f"bucket. Permission '{permission}' denied on resource (or it may not exist)."))
            return
        status, headers, data = forward_http("127.0.0.1", self._emulator_port, method, handler.path, handler.headers, body)
        named = re.match(r"^/storage/v1/b/([^/]+)", path)
        if status == 200 and method == "GET" and named:
            data = self._rewrite(path, unquote(named[1]), data)
        send(handler, status, data, content_type=headers.get("content-type"),
             headers={k: v for k, v in headers.items() if k not in _HOP_HEADERS and k != "content-type"})

    def _rewrite(self, path: str, bucket: str, data: bytes) -> bytes:
        if re.match(r"^/storage/v1/b/[^/]+$", path) and bucket in self.locations:
            doc = json.loads(data)
            doc["location"], doc["locationType"] = self.locations[bucket]
            return json.dumps(doc).encode()
        if path.endswith("/iam/testPermissions"):
            doc = json.loads(data)
            denied = self.denied.get(bucket, set())
            doc["permissions"] = [p for p in doc.get("permissions", []) if p not in denied]
            if not doc["permissions"]:
                doc.pop("permissions")  # the real API omits the field when nothing is granted
            return json.dumps(doc).encode()
        return data
