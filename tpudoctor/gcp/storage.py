"""Cloud Storage through ``google-cloud-storage``: bucket metadata, IAM self-test, listing, reads.

Built by the session (``Session.storage``), which chose the endpoint (``STORAGE_EMULATOR_HOST``, the client
library's own variable, else storage.googleapis.com) and the credentials. The library's default retry waits
up to two minutes, so every call here passes its own timeout and ``retry=None`` and goes through our bounded
retry instead.
"""

from __future__ import annotations

import uuid
from typing import Any

from tpudoctor.gcp.credentials import Identity
from tpudoctor.gcp.errors import call_with_retries

PROBE_PREFIX = ".tpudoctor-probe-"


class StorageApi:
    def __init__(self, credentials: Any, *, identity: Identity, project: str, endpoint: str | None,
                 timeout_s: float, attempts: int = 3, backoff_s: float = 0.25):
        from google.cloud import storage

        options = {"api_endpoint": endpoint} if endpoint else None
        self._client = storage.Client(project=project, credentials=credentials, client_options=options)
        self.identity = identity
        """Who the calls are made as."""
        self.timeout_s = timeout_s
        self.attempts = attempts
        self.backoff_s = backoff_s

    def _call(self, fn, permission: str | None):
        return call_with_retries(fn, permission=permission, attempts=self.attempts, backoff_s=self.backoff_s)

    def bucket_info(self, bucket: str) -> dict[str, Any]:
        b = self._call(lambda: self._client.get_bucket(bucket, timeout=self.timeout_s, retry=None),
                       "storage.buckets.get")
        placement = (b._properties.get("customPlacementConfig") or {}).get("dataLocations") or []
        return {
            "location": (b.location or "").upper() or None,
            "location_type": b.location_type,
            "storage_class": b.storage_class,
            "data_locations": [str(x).upper() for x in placement],
        }

    def granted_permissions(self, bucket: str, permissions: tuple[str, ...]) -> list[str]:
        b = self._client.bucket(bucket)
        return list(self._call(
            lambda: b.test_iam_permissions(list(permissions), timeout=self.timeout_s, retry=None),
            None,
        ))

    def list_objects(self, bucket: str, prefix: str, *, limit: int) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``limit`` objects under ``prefix``: ([{name, size_bytes, updated, created}], truncated).
        ``updated`` and ``created`` are ISO 8601 text from the server's clock, None where it gave none."""

        def fetch() -> tuple[list[dict[str, Any]], bool]:
            blobs = self._client.list_blobs(bucket, prefix=prefix or None, max_results=limit + 1,
                                            timeout=self.timeout_s, retry=None)
            found = [{"name": blob.name, "size_bytes": int(blob.size or 0),
                      "updated": blob.updated.isoformat() if blob.updated else None,
                      "created": blob.time_created.isoformat() if blob.time_created else None} for blob in blobs]
            return found[:limit], len(found) > limit

        return self._call(fetch, "storage.objects.list")

    def list_level(self, bucket: str, prefix: str) -> tuple[list[str], list[str]]:
        """One folder level under ``prefix`` ("a/b/" or ""): (object names, sub-prefixes), both in full."""

        def fetch() -> tuple[list[str], list[str]]:
            blobs = self._client.list_blobs(bucket, prefix=prefix or None, delimiter="/",
                                            timeout=self.timeout_s, retry=None)
            names = [blob.name for blob in blobs]  # iterating fills .prefixes page by page
            return names, sorted(blobs.prefixes)

        return self._call(fetch, "storage.objects.list")

    def read_head(self, bucket: str, name: str, nbytes: int) -> bytes:
        blob = self._client.bucket(bucket).blob(name)
        return self._call(
            lambda: blob.download_as_bytes(start=0, end=nbytes - 1, timeout=self.timeout_s, retry=None,
                                           checksum=None),
            "storage.objects.get",
        )

    def probe_object_name(self, prefix: str) -> str:
        prefix = prefix.rstrip("/")
        return f"{prefix + '/' if prefix else ''}{PROBE_PREFIX}{uuid.uuid4().hex}"

    def write_object(self, bucket: str, name: str, data: bytes) -> None:
        blob = self._client.bucket(bucket).blob(name)
        self._call(lambda: blob.upload_from_string(data, timeout=self.timeout_s, retry=None,
                                                   if_generation_match=0),
                   "storage.objects.create")

    def delete_object(self, bucket: str, name: str) -> None:
        blob = self._client.bucket(bucket).blob(name)
        self._call(lambda: blob.delete(timeout=self.timeout_s, retry=None), "storage.objects.delete")

    def read_object(self, bucket: str, name: str) -> bytes:
        blob = self._client.bucket(bucket).blob(name)
        return self._call(lambda: blob.download_as_bytes(timeout=self.timeout_s, retry=None),
                          "storage.objects.get")

    def download_object(self, bucket: str, name: str, path: str) -> None:
        """The object into a local file, streamed (a capture may be larger than the memory it is worth)."""
        blob = self._client.bucket(bucket).blob(name)
        self._call(lambda: blob.download_to_filename(path, timeout=self.timeout_s, retry=None),
                   "storage.objects.get")

    def put_text(self, bucket: str, name: str, text: str, content_type: str) -> None:
        """Write (or replace) one object: only for a destination the user named (``-o gs://...``)."""
        blob = self._client.bucket(bucket).blob(name)
        self._call(lambda: blob.upload_from_string(text.encode("utf-8"), content_type=content_type,
                                                   timeout=self.timeout_s, retry=None),
                   "storage.objects.create")
