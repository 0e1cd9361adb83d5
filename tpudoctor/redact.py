"""Scrubbing reports before they leave the machine.

Two levels:

* ``scrub_secrets`` always runs on every report: access tokens, bearer headers, private keys
  and API keys never reach output, whatever a log line or an API error quoted.
* ``Redactor`` runs with ``--redact`` for a report that will be shared: project ids,
  service-account e-mails, IP addresses and bucket names become stable placeholders
  (``<project-1>``, ``<bucket-2>``), so the report still reads consistently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_SECRET_PATTERNS = (
    (re.compile(r"ya29\.[0-9A-Za-z_\-\.]{10,}"), "<access-token>"),
    (re.compile(r"(?i)(authorization:\s*bearer\s+)[0-9A-Za-z_\-\.=]+"), r"\1<token>"),
    (re.compile(r"(?i)\bbearer\s+[0-9A-Za-z_\-\.=]{16,}"), "Bearer <token>"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S), "<private-key>"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), "<api-key>"),
    (re.compile(r"(?i)(\"?(?:access_token|refresh_token|client_secret|id_token)\"?\s*[:=]\s*\"?)[^\s\",}]+"), r"\1<secret>"),
)

_EMAIL = re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b")
# A dotted quad that is a version, not a host: 0.x.x.x names no host (libtpu 0.0.42.1, libtpu-nightly's 0.1.x),
# and one after a version specifier or a "v" is a version too (tensorflow==2.15.0.1, v1.2.3.4). "." and digits
# on either side make it a longer dotted number (a 5-part version, an OID), not an address.
_IPV4 = re.compile(r"(?<![\w.])(?<!==)(?<!>=)(?<!<=)(?<!~=)(?!0\.)"
                   r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?!\w|\.\d)")
_IPV6 = re.compile(r"\b(?:[0-9a-fA-F]{1,4}:){4,7}[0-9a-fA-F]{1,4}\b")
_GS_BUCKET = re.compile(r"gs://([a-z0-9][a-z0-9._\-]{1,220}[a-z0-9])")
_PROJECT_IN_PATH = re.compile(r"\bprojects/([a-z][a-z0-9\-]{4,28}[a-z0-9])\b")
_SA_PROJECT = re.compile(r"@([a-z][a-z0-9\-]{4,28}[a-z0-9])\.iam\.gserviceaccount\.com")


def scrub_secrets(text: str) -> str:
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def scrub_secrets_in(value: Any) -> Any:
    return _walk(value, scrub_secrets)


class Redactor:
    """Replaces identifying values with placeholders that stay the same within one report."""

    def __init__(self, projects: Iterable[str] = (), buckets: Iterable[str] = (), hosts: Iterable[str] = ()):
        self._maps: dict[str, dict[str, str]] = {"project": {}, "bucket": {}, "email": {}, "ip": {}, "host": {}}
        for p in projects:
            if p:
                self._placeholder("project", p)
        for b in buckets:
            if b:
                self._placeholder("bucket", b)
        for h in hosts:
            if h and h != "localhost" and not _IPV4.fullmatch(h):
                self._placeholder("host", h)

    def _placeholder(self, kind: str, value: str) -> str:
        table = self._maps[kind]
        if value not in table:
            table[value] = f"<{kind}-{len(table) + 1}>"
        return table[value]

    def _learn(self, text: str) -> None:
        for m in _PROJECT_IN_PATH.finditer(text):
            self._placeholder("project", m.group(1))
        for m in _SA_PROJECT.finditer(text):
            self._placeholder("project", m.group(1))
        for m in _GS_BUCKET.finditer(text):
            self._placeholder("bucket", m.group(1))

    def text(self, text: str) -> str:
        text = scrub_secrets(text)
        text = _EMAIL.sub(lambda m: self._placeholder("email", m.group(0)), text)
        text = _GS_BUCKET.sub(lambda m: "gs://" + self._placeholder("bucket", m.group(1)), text)
        text = _IPV4.sub(lambda m: self._placeholder("ip", m.group(0)), text)
        text = _IPV6.sub(lambda m: self._placeholder("ip", m.group(0)), text)
        for kind in ("project", "bucket", "host"):
            # Longest first, so "my-proj-dev" is not half-replaced by "my-proj".
            for value in sorted(self._maps[kind], key=len, reverse=True):
                if len(value) >= 3:
                    text = re.sub(rf"(?<![A-Za-z0-9\-_<]){re.escape(value)}(?![A-Za-z0-9\-_>])",
                                  self._maps[kind][value], text)
        return text

    def learn(self, value: Any) -> None:
        """Learn every id in ``value`` (so placeholders do not depend on the order values are redacted in)."""
        _walk(value, lambda s: (self._learn(s), s)[1])

    def value(self, value: Any) -> Any:
        self.learn(value)
        return _walk(value, self.text)


def _walk(value: Any, fn) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {(fn(k) if isinstance(k, str) else k): _walk(v, fn) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_walk(v, fn) for v in value)
    return value


def sanitize_report_dict(doc: dict[str, Any], *, redact: bool) -> dict[str, Any]:
    """Every check report passes here before rendering: secrets always go, identities with ``--redact``."""
    doc = scrub_secrets_in(doc)
    return redact_report_dict(doc) if redact else doc


SCHEMA_KEYS = ("schema_version", "kind", "tool")
"""Top-level keys that name the document's shape, never an identity: they stay as written."""


def redact_document(doc: dict[str, Any], *, hosts: Iterable[str] = (), projects: Iterable[str] = (),
                    keep: Iterable[str] = SCHEMA_KEYS) -> dict[str, Any]:
    """``doc`` with identities replaced, before any renderer formats it (every format then shows the same
    placeholders, each escaped by its renderer like any other value): ``hosts`` and ``projects`` wherever
    they appear, and the e-mails, IPs, bucket names and ``projects/...`` found in any value. Every id is
    learnt from the whole document first, so a placeholder does not depend on where it is first met."""
    keep = frozenset(keep)
    redactor = Redactor(projects=projects, hosts=hosts)
    body = {key: value for key, value in doc.items() if key not in keep}
    redactor.learn(body)
    return {**{key: (value if key in keep else _walk(value, redactor.text)) for key, value in doc.items()},
            "redacted": True}


def named_identities(doc: dict[str, Any]) -> dict[str, list[str]]:
    """The hosts and projects a document names in its own fields (``host``, ``hostname``, ``hosts``,
    ``failed_hosts``, ``project``), in the order met: ``redact_document``'s ``hosts`` and ``projects``."""
    found: dict[str, dict[str, None]] = {"hosts": {}, "projects": {}}

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("host", "hostname") and isinstance(item, str):
                    found["hosts"][item] = None
                elif key in ("hosts", "failed_hosts") and isinstance(item, (list, dict)):
                    found["hosts"].update((name, None) for name in item if isinstance(name, str))
                elif key == "project" and isinstance(item, str):
                    found["projects"][item] = None
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    visit(doc)
    return {kind: list(names) for kind, names in found.items()}


def redact_report_dict(doc: dict[str, Any], *, extra_projects: Iterable[str] = ()) -> dict[str, Any]:
    """Redact a check report document: its target's project and every id found in it; the reporting
    machine's name is ``<host>``; ``started_at`` and the status counts stay."""
    target = doc.get("target") or {}
    out = redact_document(doc, projects=[target.get("project") or "", *extra_projects],
                          keep=(*SCHEMA_KEYS, "started_at", "summary"))
    if isinstance(doc.get("host"), str) and doc["host"]:
        out["host"] = "<host>"
    return out
