"""Parse the user's data/checkpoint/log paths (gs:// or local) and name the common mistakes. Pure, no I/O."""

from __future__ import annotations

import re
from typing import Any

ROLES = ("data", "checkpoint", "log")
WRITABLE_ROLES = frozenset({"checkpoint", "log"})

_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_HTTP_FORMS = (
    re.compile(r"^https?://storage\.(?:cloud\.)?googleapis\.com/(?:storage/v1/b/)?(?P<rest>.+)$"),
    re.compile(r"^https?://console\.cloud\.google\.com/storage/browser/(?P<rest>[^?#]+)"),
)


def bucket_name_problem(bucket: str) -> str | None:
    """Why ``bucket`` cannot be a Cloud Storage bucket's name, or None where it can."""
    if not _BUCKET_NAME.match(bucket) or ".." in bucket or len(bucket.split(".")[0]) > 63:
        return f"{bucket!r} is not a valid bucket name (3-63 characters: a-z, 0-9, '-', '_', '.')"
    return None


def split_gs_uri(uri: str) -> tuple[str, str]:
    """``gs://bucket/a/b`` -> ("bucket", "a/b"); ``UsageError`` where no bucket is named."""
    from tpudoctor.errors import UsageError

    bucket, _, name = uri.removeprefix("gs://").partition("/")
    if not bucket:
        raise UsageError(f"{uri} names no bucket", hint="use gs://BUCKET/PREFIX")
    return bucket, name


def split_user_gs_uri(uri: str) -> tuple[str, str]:
    """``split_gs_uri`` of a URI the user typed: also a ``UsageError`` where the name cannot be a bucket's, said
    before any credentials are looked up."""
    from tpudoctor.errors import UsageError

    bucket, name = split_gs_uri(uri)
    problem = bucket_name_problem(bucket)
    if problem is not None:
        raise UsageError(f"{uri}: {problem}", hint="use gs://BUCKET/PREFIX with the bucket's own (lower-case) name")
    return bucket, name


def parse_path(raw: str, role: str) -> dict[str, Any]:
    """{raw, role, kind: gs|local|other, bucket, prefix, problems: [{code, level, message, suggestion}]}.

    ``level`` is "fail" for a path the job cannot use, "warn" for one that works but loses data.
    """
    text = raw.strip()
    info: dict[str, Any] = {"raw": raw, "role": role, "kind": "other", "bucket": None, "prefix": None, "problems": []}

    def problem(code: str, level: str, message: str, suggestion: str | None = None) -> None:
        info["problems"].append({"code": code, "level": level, "message": message, "suggestion": suggestion})

    lower = text.lower()
    if lower.startswith("gs://") and not text.startswith("gs://"):
        problem("scheme_case", "fail", f"{raw!r}: the scheme must be lower-case 'gs://'", "gs://" + text[5:])
        text = "gs://" + text[5:]
        lower = text.lower()
    if not lower.startswith("gs://"):
        for pattern in _HTTP_FORMS:
            match = pattern.match(text)
            if match:
                suggestion = "gs://" + match["rest"].lstrip("/")
                problem("http_url", "fail", f"{raw!r} is a web URL; TensorFlow and JAX read gs:// URIs", suggestion)
                return info
        for bad, fixed in (("gs:/", "gs://"), ("gs:", "gs://"), ("gcs://", "gs://"), ("gs//", "gs://")):
            if lower.startswith(bad) and not lower.startswith("gs://"):
                suggestion = fixed + text[len(bad):].lstrip("/")
                problem("malformed_scheme", "fail", f"{raw!r} is not a gs:// URI (malformed scheme)", suggestion)
                return info
        if re.match(r"^[a-z][a-z0-9+.-]*://", lower):
            problem("unsupported_scheme", "fail", f"{raw!r}: only gs:// and local paths are supported on a TPU VM")
            return info
        info["kind"] = "local"
        if role in WRITABLE_ROLES:
            problem("local_writable", "warn",
                    f"{raw!r} is on the TPU VM's own disk: {role}s there are lost when the node is "
                    "deleted, preempted or recreated", f"gs://BUCKET/{role}s")
        return info

    info["kind"] = "gs"
    rest = text[5:]
    bucket, _, prefix = rest.partition("/")
    info["bucket"], info["prefix"] = bucket, prefix
    if not bucket:
        problem("no_bucket", "fail", f"{raw!r} names no bucket")
        return info
    if bucket != bucket.lower() and _BUCKET_NAME.match(bucket.lower()):
        problem("bucket_case", "fail", f"bucket names are lower-case; {bucket!r} cannot exist",
                f"gs://{bucket.lower()}/{prefix}".rstrip("/"))
    elif (naming := bucket_name_problem(bucket)) is not None:
        problem("bucket_name", "fail", naming)
    if "//" in prefix or prefix.startswith("/"):
        problem("double_slash", "fail", f"{raw!r} has '//' in the object path; GCS keeps it literally",
                f"gs://{bucket}/{re.sub('/+', '/', prefix).lstrip('/')}")
    if any(c in prefix for c in " \t\n"):
        problem("whitespace", "fail", f"{raw!r} contains whitespace (a quoting mistake?)")
    return info


def listing_prefix(prefix: str) -> str:
    """The literal part of a prefix before any glob character (``train-*`` -> ``train-``)."""
    for i, ch in enumerate(prefix):
        if ch in "*?[":
            return prefix[:i]
    return prefix


def has_glob(prefix: str) -> bool:
    return any(ch in prefix for ch in "*?[")
